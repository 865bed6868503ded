; Zig for the query analyzer (see src/lang/query.rs for the captures).

; `const std = @import("std");`
(variable_declaration
  (identifier) @import.name
  (builtin_function
    (builtin_identifier) @_b
    (#eq? @_b "@import")
    (arguments . (string (string_content) @import.path)))) @import

; `const Pool = @import("pool.zig").Pool;`
(variable_declaration
  (identifier) @import.name
  (field_expression
    object: (builtin_function
      (builtin_identifier) @_b
      (#eq? @_b "@import")
      (arguments . (string (string_content) @import.path)))
    member: (identifier) @import.member)) @import

(variable_declaration
  (identifier) @name
  (struct_declaration) @body) @definition.struct

(variable_declaration
  (identifier) @name
  (union_declaration) @body) @definition.struct

(variable_declaration
  (identifier) @name
  (enum_declaration) @body) @definition.enum

(test_declaration
  [(string (string_content) @name) (identifier) @name]
  (block) @body) @definition.test

(function_declaration
  name: (identifier) @name
  body: (block)? @body) @definition.function

(container_field
  name: (_) @name) @definition.field

(source_file
  (variable_declaration
    (identifier) @name) @definition.variable)

(struct_declaration
  (variable_declaration
    (identifier) @name) @definition.variable)

(call_expression
  function: [(identifier) (field_expression)] @call.name) @call
