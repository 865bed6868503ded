; Go for the query analyzer: the proof against the hand-written go.rs (see
; go_query_matches_the_hand_written_analyzer); go.rs stays the production
; analyzer because the query form cannot write calls on a typed receiver or
; parameter against the type (`c.Next()` -> `Context.Next`), tell test files
; from others, or keep group docs, trailing comments and mentions.

; Imports: a lone spec spans its declaration, a grouped one itself.
(import_declaration
  (import_spec
    name: (_)? @import.name
    path: (_) @import.path)) @import

(import_spec_list
  (import_spec
    name: (_)? @import.name
    path: (_) @import.path) @import)

; Tests with a *testing.T/B/F parameter.
(function_declaration
  name: (identifier) @name
  (#match? @name "^(Test|Benchmark|Fuzz)([^a-z]|$)")
  parameters: (parameter_list
    (parameter_declaration
      type: (pointer_type (qualified_type package: (package_identifier) @_pkg (#eq? @_pkg "testing")))))
  body: (block)? @body) @definition.test

(function_declaration
  name: (identifier) @name
  body: (block)? @body) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @owner
        (pointer_type (type_identifier) @owner)
        (generic_type type: (type_identifier) @owner)
        (pointer_type (generic_type type: (type_identifier) @owner))
      ]))
  name: (field_identifier) @name
  body: (block)? @body) @definition.method

; File-level types: a lone spec spans its declaration, a grouped one itself
; (types local to a function body are not declarations of the file).
(source_file
  (type_declaration
    .
    (type_spec
      name: (type_identifier) @name
      type: (struct_type (field_declaration_list) @body))
    .) @definition.struct)

(source_file
  (type_declaration
    .
    (type_spec
      name: (type_identifier) @name
      type: (interface_type) @body)
    .) @definition.interface)

(source_file
  (type_declaration
    .
    [(type_spec name: (type_identifier) @name) (type_alias name: (type_identifier) @name)]
    .) @definition.type_alias)

(source_file
  (type_declaration
    (type_spec
      name: (type_identifier) @name
      type: (struct_type (field_declaration_list) @body)) @definition.struct))

(source_file
  (type_declaration
    (type_spec
      name: (type_identifier) @name
      type: (interface_type) @body) @definition.interface))

(source_file
  (type_declaration
    [(type_spec name: (type_identifier) @name) (type_alias name: (type_identifier) @name)] @definition.type_alias))

; Fields of file-level structs (not of anonymous structs inside them), and
; embedded fields as `Inherits`.
(source_file
  (type_declaration
    (type_spec
      type: (struct_type
        (field_declaration_list
          (field_declaration
            name: (field_identifier) @name) @definition.field)))))

(source_file
  (type_declaration
    (type_spec
      type: (struct_type
        (field_declaration_list
          (field_declaration
            !name
            type: [
              (type_identifier) @inherits
              (qualified_type) @inherits
              (pointer_type [(type_identifier) (qualified_type)] @inherits)
              (generic_type type: (_) @inherits)
            ]))))))

; Interface methods and embedded interfaces.
(source_file
  (type_declaration
    (type_spec
      type: (interface_type
        (method_elem
          name: (field_identifier) @name) @definition.method))))

(source_file
  (type_declaration
    (type_spec
      type: (interface_type
        (type_elem
          .
          [(type_identifier) (qualified_type)] @inherits
          .
          (#not-any-of? @inherits "any" "comparable" "error"))))))

(source_file
  (type_declaration
    (type_spec
      type: (interface_type
        (type_elem
          .
          (generic_type type: (_) @inherits)
          .)))))

; File-level constants and variables: a lone spec spans its declaration.
(source_file
  (const_declaration
    .
    (const_spec name: (identifier) @name (#not-eq? @name "_"))
    .) @definition.variable)

(source_file
  (var_declaration
    .
    (var_spec name: (identifier) @name (#not-eq? @name "_"))
    .) @definition.variable)

(source_file
  (const_declaration
    (const_spec name: (identifier) @name (#not-eq? @name "_")) @definition.variable))

(source_file
  (var_declaration
    (var_spec_list
      (var_spec name: (identifier) @name (#not-eq? @name "_")) @definition.variable)))

; Calls, without builtins and conversions to predeclared types.
(call_expression
  function: (identifier) @call.name
  (#not-any-of? @call.name
    "append" "cap" "clear" "close" "complex" "copy" "delete" "imag" "len" "make" "max" "min" "new"
    "panic" "print" "println" "real" "recover"
    "any" "bool" "byte" "comparable" "complex64" "complex128" "error" "float32" "float64" "int" "int8"
    "int16" "int32" "int64" "rune" "string" "uint" "uint8" "uint16" "uint32" "uint64" "uintptr")) @call

(call_expression
  function: [(selector_expression) (parenthesized_expression (selector_expression)) (generic_type) (index_expression)] @call.name) @call
