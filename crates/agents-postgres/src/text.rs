pub struct PgTextBackend;
