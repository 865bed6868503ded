; Haskell for the query analyzer (see src/lang/query.rs for the captures).
; A signature and the equations after it are clauses of one function
; (merge_clauses), so the signature gives its header.

(import
  module: (module) @import.path
  alias: (module)? @import.name) @import

(data_type
  name: (_) @name) @definition.enum

(newtype
  name: (_) @name) @definition.struct

(type_synonym
  name: (_) @name) @definition.type_alias

(class
  name: (_) @name
  declarations: (_)? @body) @definition.trait

(instance
  name: (_) @name
  patterns: (type_patterns (_) @name)
  declarations: (_)? @body) @definition.class

(data_constructor
  constructor: [(prefix (constructor) @name) (record (constructor) @name) (infix (constructor_operator) @name)]) @definition.field

(field
  name: (field_name (variable) @name)) @definition.field

(class_declarations
  (signature
    name: (variable) @name) @definition.method)

; Top-level and instance functions (not `where`/`let` locals).
(declarations
  [(signature name: (variable) @name)
   (function name: (variable) @name)
   (bind name: (variable) @name)] @definition.function)

(instance_declarations
  [(function name: (variable) @name)
   (bind name: (variable) @name)] @definition.function)

(apply
  function: [(variable) (qualified)] @call.name) @call
