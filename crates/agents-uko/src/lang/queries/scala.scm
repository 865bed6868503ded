; Scala for the query analyzer (see src/lang/query.rs for the captures).

(class_definition
  name: (_) @name
  body: (_)? @body) @definition.class

(object_definition
  name: (_) @name
  body: (_)? @body) @definition.class

(trait_definition
  name: (_) @name
  body: (_)? @body) @definition.trait

(enum_definition
  name: (_) @name
  body: (_)? @body) @definition.enum

(simple_enum_case
  name: (_) @name) @definition.field

(full_enum_case
  name: (_) @name) @definition.field

(extends_clause
  [(type_identifier) (stable_type_identifier)] @inherits)

(extends_clause
  type: (generic_type type: (_) @inherits))

(extends_clause
  type: (compound_type [(type_identifier) (stable_type_identifier)] @inherits))

(extends_clause
  type: (compound_type (generic_type type: (_) @inherits)))

; ScalaTest and MUnit: `test("saves") { ... }`.
(call_expression
  function: (call_expression
    function: (identifier) @_t
    (#any-of? @_t "test" "it")
    arguments: (arguments . (string) @name))
  arguments: (_) @body) @definition.test

(function_definition
  name: (_) @name
  body: (_)? @body) @definition.function

(function_declaration
  name: (_) @name) @definition.function

; File-level and member vals and vars (not locals).
(compilation_unit
  [(val_definition pattern: (identifier) @name) (var_definition pattern: (identifier) @name)] @definition.variable)

(template_body
  [(val_definition pattern: (identifier) @name) (var_definition pattern: (identifier) @name)] @definition.variable)

(type_definition
  name: (type_identifier) @name) @definition.type_alias

; `import a.b.C`, `import a.b._`, `import a.b.*`, `import a.b.{C, D => E}`, `import a.b.C as D`.
(import_declaration
  (identifier) @import.path
  (namespace_wildcard) @import.wildcard) @import

(import_declaration
  (identifier) @import.path
  (namespace_selectors
    [(identifier) @import.name
     (arrow_renamed_identifier alias: (_) @import.name)
     (as_renamed_identifier alias: (_) @import.name)]*)) @import

(import_declaration
  (identifier) @import.path
  (as_renamed_identifier
    name: (_) @import.path
    alias: (_) @import.name)) @import

(import_declaration
  (identifier) @import.path) @import

(call_expression
  function: [(identifier) (field_expression)] @call.name) @call

(call_expression
  function: (generic_function function: (_) @call.name)) @call

(instance_expression
  (type_identifier) @call.name) @call
