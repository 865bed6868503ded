; PHP for the query analyzer (see src/lang/query.rs for the captures).

(namespace_definition
  name: (namespace_name) @name
  body: (_)? @body) @definition.namespace

(class_declaration
  name: (name) @name
  body: (_) @body) @definition.class

(interface_declaration
  name: (name) @name
  body: (_) @body) @definition.interface

(trait_declaration
  name: (name) @name
  body: (_) @body) @definition.trait

(enum_declaration
  name: (name) @name
  body: (_) @body) @definition.enum

(base_clause [(name) (qualified_name)] @inherits)

(class_interface_clause [(name) (qualified_name)] @inherits)

; `use Timestamps;` inside a class: a trait mixed in.
(use_declaration [(name) (qualified_name)] @inherits)

(enum_case
  name: (name) @name) @definition.field

; PHPUnit: `public function testSaves()`.
(method_declaration
  name: (name) @name
  (#match? @name "^test")
  body: (_)? @body) @definition.test

(method_declaration
  name: (name) @name
  body: (_)? @body) @definition.method

(function_definition
  name: (name) @name
  body: (_) @body) @definition.function

(property_declaration
  (property_element
    name: (variable_name) @name)) @definition.field

(const_declaration
  (const_element (name) @name)) @definition.variable

; `use App\Models\User;`, `use App\Models\User as Member;`
(namespace_use_declaration
  (namespace_use_clause
    .
    [(name) (qualified_name)] @import.path
    alias: (name)? @import.name) @import)

; `require_once __DIR__ . '/x.php'` stays unresolved; `require 'x.php'` is relative.
(require_expression
  [(string (string_content) @import.path) (encapsed_string (string_content) @import.path)]) @import

(require_once_expression
  [(string (string_content) @import.path) (encapsed_string (string_content) @import.path)]) @import

(include_expression
  [(string (string_content) @import.path) (encapsed_string (string_content) @import.path)]) @import

(include_once_expression
  [(string (string_content) @import.path) (encapsed_string (string_content) @import.path)]) @import

(function_call_expression
  function: [(name) (qualified_name)] @call.name) @call

(member_call_expression
  object: [(variable_name) (name)] @call.name
  name: (name) @call.name) @call

(member_call_expression
  name: (name) @call.name) @call

(nullsafe_member_call_expression
  object: [(variable_name) (name)] @call.name
  name: (name) @call.name) @call

(scoped_call_expression
  scope: [(name) (qualified_name) (relative_scope)] @call.name
  name: (name) @call.name) @call

(object_creation_expression
  [(name) (qualified_name)] @call.name) @call
