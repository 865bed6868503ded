; C# for the query analyzer (see src/lang/query.rs for the captures).

(namespace_declaration
  name: (_) @name
  body: (_) @body) @definition.namespace

(file_scoped_namespace_declaration
  name: (_) @name) @definition.namespace

(class_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.class

(record_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.class

(struct_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.struct

(interface_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.interface

(enum_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.enum

(base_list [(identifier) (qualified_name)] @inherits)

(base_list (generic_name . (identifier) @inherits))

(delegate_declaration
  name: (identifier) @name) @definition.type_alias

; xUnit, NUnit and MSTest tests.
(method_declaration
  (attribute_list
    (attribute
      name: (identifier) @_attr
      (#any-of? @_attr "Fact" "Theory" "Test" "TestCase" "TestMethod" "DataTestMethod")))
  name: (identifier) @name
  body: (_)? @body) @definition.test

(method_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.function

(constructor_declaration
  name: (identifier) @name
  body: (_)? @body) @definition.function

(local_function_statement
  name: (identifier) @name
  body: (_)? @body) @definition.function

; A property with accessor bodies: the header before them. Auto-properties
; (`{ get; private set; }`) and `=>` properties keep their first line, so the
; signature shows the accessors.
(property_declaration
  name: (identifier) @name
  accessors: (accessor_list (accessor_declaration body: (_))) @body) @definition.field

(property_declaration
  name: (identifier) @name) @definition.field

(field_declaration
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))) @definition.field

(enum_member_declaration
  name: (identifier) @name) @definition.field

; `using System.Text;`, `using static System.Math;`, `using Json = System.Text.Json;`
(using_directive
  !name
  [(identifier) (qualified_name)] @import.path) @import

(using_directive
  name: (identifier) @import.name
  [(identifier) (qualified_name)] @import.path) @import

(invocation_expression
  function: [(identifier) (member_access_expression)] @call.name) @call

(invocation_expression
  function: (generic_name . (identifier) @call.name)) @call

(object_creation_expression
  type: [(identifier) (qualified_name)] @call.name) @call

(object_creation_expression
  type: (generic_name . (identifier) @call.name)) @call
