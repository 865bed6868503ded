//! The small shop repository the query tests of the engine and of the
//! binary share: an invoice module, a parcel module, 30 unrelated helpers, a
//! long ledger and a README. Included with `#[path]` by both test crates.

use std::path::Path;

/// Writes the shop's files under `repo`.
pub fn write(repo: &Path) {
    let write = |rel: &str, text: &str| {
        let p = repo.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "billing/invoice.py",
        "\"\"\"Invoices and their totals.\"\"\"\n\n\nclass Invoice:\n    \"\"\"A bill sent to a customer.\"\"\"\n\n    def total_amount(self):\n        \"\"\"Sum of the line items, with tax.\"\"\"\n        return sum(item.price for item in self.items) * 1.2\n\n    def send_reminder(self, days_late):\n        \"\"\"Email the customer about a late payment.\"\"\"\n        return f\"reminder after {days_late} days\"\n",
    );
    write(
        "shipping/parcel.py",
        "class Parcel:\n    \"\"\"A box on its way.\"\"\"\n\n    def weight(self):\n        return 3\n",
    );
    for i in 0..30 {
        write(
            &format!("misc/module_{i:02}.py"),
            &format!(
                "def helper_{i}(value):\n    \"\"\"Unrelated helper number {i} that formats a value.\"\"\"\n    return str(value) * {i}\n"
            ),
        );
    }
    let mut ledger = String::from("\"\"\"The ledger: every posting of every account.\"\"\"\n\n");
    for i in 0..120 {
        ledger
            .push_str(&format!("def post_entry_{i}(account, amount):\n    return account.balance + amount * {i}\n\n"));
    }
    write("billing/ledger.py", &ledger);
    write("README.md", "# Shop\n\nInvoices, parcels and helpers.\n");
}
