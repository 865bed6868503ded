; Kotlin for the query analyzer (see src/lang/query.rs for the captures).

(class_declaration
  "interface"
  name: (identifier) @name
  (class_body)? @body) @definition.interface

(class_declaration
  (modifiers (class_modifier) @_m (#eq? @_m "enum"))
  name: (identifier) @name
  (enum_class_body)? @body) @definition.enum

(class_declaration
  name: (identifier) @name
  [(class_body) (enum_class_body)]? @body) @definition.class

(object_declaration
  name: (identifier) @name
  (class_body)? @body) @definition.class

(companion_object
  name: (identifier) @name
  (class_body)? @body) @definition.class

(delegation_specifier
  [
    (type (user_type . (identifier) @inherits))
    (constructor_invocation (type (user_type . (identifier) @inherits)))
    (user_type . (identifier) @inherits)
    (constructor_invocation (user_type . (identifier) @inherits))
  ])

(enum_entry
  (identifier) @name) @definition.field

; JUnit and kotlin.test: `@Test fun saves()`.
(function_declaration
  (modifiers
    (annotation
      [(user_type (identifier) @_a) (type (user_type (identifier) @_a))
       (constructor_invocation (user_type (identifier) @_a))]
      (#any-of? @_a "Test" "ParameterizedTest" "RepeatedTest")))
  name: (identifier) @name
  (function_body)? @body) @definition.test

(function_declaration
  name: (identifier) @name
  (function_body)? @body) @definition.function

(secondary_constructor
  "constructor" @name
  (block)? @body) @definition.method

; File-level and member properties (not locals).
(source_file
  (property_declaration
    (variable_declaration
      (identifier) @name)) @definition.variable)

(class_body
  (property_declaration
    (variable_declaration
      (identifier) @name)) @definition.variable)

(enum_class_body
  (property_declaration
    (variable_declaration
      (identifier) @name)) @definition.variable)

(type_alias
  type: (identifier) @name) @definition.type_alias

; `import a.b.C`, `import a.b.C as D`; `import a.b.*` names `*`.
(import
  (qualified_identifier) @import.path
  "*" @import.wildcard) @import

(import
  (qualified_identifier) @import.path
  (identifier)? @import.name) @import

(call_expression
  .
  [(identifier) (navigation_expression)] @call.name) @call
