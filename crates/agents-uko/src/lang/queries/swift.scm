; Swift for the query analyzer (see src/lang/query.rs for the captures).

(class_declaration
  declaration_kind: ["class" "actor"]
  name: (type_identifier) @name
  body: (_) @body) @definition.class

(class_declaration
  declaration_kind: "struct"
  name: (type_identifier) @name
  body: (_) @body) @definition.struct

(class_declaration
  declaration_kind: "enum"
  name: (type_identifier) @name
  body: (_) @body) @definition.enum

(protocol_declaration
  name: (type_identifier) @name
  body: (_) @body) @definition.interface

(inheritance_specifier
  inherits_from: (user_type . (type_identifier) @inherits))

(enum_entry
  name: (simple_identifier) @name) @definition.field

; Members of an extension go under the extended type.
(class_declaration
  declaration_kind: "extension"
  name: (user_type . (type_identifier) @owner)
  body: (class_body
    (function_declaration
      name: (simple_identifier) @name
      body: (_)? @body) @definition.method))

; XCTest: `func testSaves()` in a class.
(class_body
  (function_declaration
    name: (simple_identifier) @name
    (#match? @name "^test")
    body: (_)? @body) @definition.test)

(function_declaration
  name: (simple_identifier) @name
  body: (_)? @body) @definition.function

(protocol_function_declaration
  name: (simple_identifier) @name) @definition.method

(init_declaration
  name: "init" @name
  body: (_)? @body) @definition.method

(source_file
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)) @definition.variable)

(class_body
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)) @definition.field)

(enum_class_body
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)) @definition.field)

(protocol_property_declaration
  name: (pattern bound_identifier: (simple_identifier) @name)) @definition.field

(typealias_declaration
  name: (type_identifier) @name) @definition.type_alias

(import_declaration
  (identifier) @import.path) @import

(call_expression
  .
  [(simple_identifier) (navigation_expression)] @call.name) @call
