; Java for the query analyzer: the second proof against a hand-written
; analyzer (java.rs; see java_query_matches_the_hand_written_analyzer).
; java.rs stays: it writes mentions of types with generics left out, and
; calls through `new T()` receivers, and on locals, parameters and fields
; of a declared type, as `T.m`.

(import_declaration
  [(scoped_identifier) (identifier)] @import.path
  (asterisk) @import.wildcard) @import

(import_declaration
  [(scoped_identifier) (identifier)] @import.path) @import

(class_declaration
  name: (identifier) @name
  body: (_) @body) @definition.class

(record_declaration
  name: (identifier) @name
  body: (_) @body) @definition.class

(interface_declaration
  name: (identifier) @name
  body: (_) @body) @definition.interface

(annotation_type_declaration
  name: (identifier) @name
  body: (_) @body) @definition.interface

(enum_declaration
  name: (identifier) @name
  body: (_) @body) @definition.enum

(enum_constant
  name: (identifier) @name
  body: (_)? @body) @definition.field

(record_declaration
  parameters: (formal_parameters
    (formal_parameter
      name: (identifier) @name) @definition.field))

(superclass [(type_identifier) (scoped_type_identifier)] @inherits)
(superclass (generic_type . [(type_identifier) (scoped_type_identifier)] @inherits))
(super_interfaces (type_list [(type_identifier) (scoped_type_identifier)] @inherits))
(super_interfaces (type_list (generic_type . [(type_identifier) (scoped_type_identifier)] @inherits)))
(extends_interfaces (type_list [(type_identifier) (scoped_type_identifier)] @inherits))
(extends_interfaces (type_list (generic_type . [(type_identifier) (scoped_type_identifier)] @inherits)))


; Members: tests (JUnit 5, jqwik), in each kind of type body (not anonymous classes).
[
  (class_declaration body: (class_body (method_declaration
      (modifiers [(marker_annotation name: (_) @_a) (annotation name: (_) @_a)])
      (#match? @_a "(^|\\.)(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property)$")
      name: (identifier) @name
      body: (_)? @body) @definition.test))
  (record_declaration body: (class_body (method_declaration
      (modifiers [(marker_annotation name: (_) @_a) (annotation name: (_) @_a)])
      (#match? @_a "(^|\\.)(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property)$")
      name: (identifier) @name
      body: (_)? @body) @definition.test))
  (enum_declaration body: (enum_body (enum_body_declarations (method_declaration
      (modifiers [(marker_annotation name: (_) @_a) (annotation name: (_) @_a)])
      (#match? @_a "(^|\\.)(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property)$")
      name: (identifier) @name
      body: (_)? @body) @definition.test)))
  (enum_constant body: (class_body (method_declaration
      (modifiers [(marker_annotation name: (_) @_a) (annotation name: (_) @_a)])
      (#match? @_a "(^|\\.)(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property)$")
      name: (identifier) @name
      body: (_)? @body) @definition.test))
  (interface_declaration body: (interface_body (method_declaration
      (modifiers [(marker_annotation name: (_) @_a) (annotation name: (_) @_a)])
      (#match? @_a "(^|\\.)(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate|Property)$")
      name: (identifier) @name
      body: (_)? @body) @definition.test))
]

; Members: methods, in each kind of type body (not anonymous classes).
[
  (class_declaration body: (class_body (method_declaration
      name: (identifier) @name
      body: (_)? @body) @definition.method))
  (record_declaration body: (class_body (method_declaration
      name: (identifier) @name
      body: (_)? @body) @definition.method))
  (enum_declaration body: (enum_body (enum_body_declarations (method_declaration
      name: (identifier) @name
      body: (_)? @body) @definition.method)))
  (enum_constant body: (class_body (method_declaration
      name: (identifier) @name
      body: (_)? @body) @definition.method))
  (interface_declaration body: (interface_body (method_declaration
      name: (identifier) @name
      body: (_)? @body) @definition.method))
]

; Members: annotation elements, in each kind of type body (not anonymous classes).
[
  (annotation_type_declaration body: (annotation_type_body (annotation_type_element_declaration
      name: (identifier) @name) @definition.method))
]

; Members: constructors, in each kind of type body (not anonymous classes).
[
  (class_declaration body: (class_body (constructor_declaration
      name: (identifier) @name
      body: (_) @body) @definition.method))
  (record_declaration body: (class_body (constructor_declaration
      name: (identifier) @name
      body: (_) @body) @definition.method))
  (enum_declaration body: (enum_body (enum_body_declarations (constructor_declaration
      name: (identifier) @name
      body: (_) @body) @definition.method)))
  (enum_constant body: (class_body (constructor_declaration
      name: (identifier) @name
      body: (_) @body) @definition.method))
]

; Members: compact constructors, in each kind of type body (not anonymous classes).
[
  (record_declaration body: (class_body (compact_constructor_declaration
      name: (identifier) @name
      body: (_) @body) @definition.method))
]

; Members: fields, in each kind of type body (not anonymous classes).
[
  (class_declaration body: (class_body (field_declaration
      declarator: (variable_declarator name: (identifier) @name)) @definition.field))
  (record_declaration body: (class_body (field_declaration
      declarator: (variable_declarator name: (identifier) @name)) @definition.field))
  (enum_declaration body: (enum_body (enum_body_declarations (field_declaration
      declarator: (variable_declarator name: (identifier) @name)) @definition.field)))
  (enum_constant body: (class_body (field_declaration
      declarator: (variable_declarator name: (identifier) @name)) @definition.field))
]

; Members: interface constants, in each kind of type body (not anonymous classes).
[
  (interface_declaration body: (interface_body (constant_declaration
      declarator: (variable_declarator name: (identifier) @name)) @definition.field))
  (annotation_type_declaration body: (annotation_type_body (constant_declaration
      declarator: (variable_declarator name: (identifier) @name)) @definition.field))
]

; `new Auditor(this).record(x)` calls `Auditor.record`.
(method_invocation
  object: (object_creation_expression
    type: [(type_identifier) (scoped_type_identifier)] @call.name)
  name: (identifier) @call.name) @call

(method_invocation
  object: (object_creation_expression
    type: (generic_type . (_) @call.name))
  name: (identifier) @call.name) @call

(method_invocation
  object: (_) @call.name
  name: (identifier) @call.name) @call

(method_invocation
  !object
  name: (identifier) @call.name) @call

(object_creation_expression
  type: [(type_identifier) (scoped_type_identifier)] @call.name) @call

(object_creation_expression
  type: (generic_type . [(type_identifier) (scoped_type_identifier)] @call.name)) @call

(method_reference
  .
  (_) @call.name
  (identifier) @call.name
  .) @call

(method_reference
  .
  (_) @call.name
  "new"
  .) @call
