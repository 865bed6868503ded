; Lua for the query analyzer (see src/lang/query.rs for the captures).

(function_declaration
  name: (_) @name
  body: (_)? @body) @definition.function

; Functions bound to a name at the top of the file: `M.name = function(...) end`,
; `local name = function(...) end`, and a function handed to a wrapper
; (`M.name = a.wrap(function(...) end, 2)`). Before the variables: the same
; `local` declaration is a function, not a variable.
(chunk
  (assignment_statement
    (variable_list . name: (_) @name)
    (expression_list . value: (function_definition body: (_)? @body))) @definition.function)

(chunk
  (variable_declaration
    (assignment_statement
      (variable_list . name: (_) @name)
      (expression_list . value: (function_definition body: (_)? @body)))) @definition.function)

(chunk
  (assignment_statement
    (variable_list . name: (_) @name)
    (expression_list . value: (function_call arguments: (arguments (function_definition body: (_)? @body))))) @definition.function)

; The functions of a table the file returns or binds at its top: `return {
; lt = function(a, b) ... end }`, `local M = { new = function() ... end }`.
(chunk
  (return_statement
    (expression_list
      (table_constructor
        (field name: (identifier) @name value: (function_definition body: (_)? @body)) @definition.function))))

(chunk
  (variable_declaration
    (assignment_statement
      (expression_list
        (table_constructor
          (field name: (identifier) @name value: (function_definition body: (_)? @body)) @definition.function)))))

; `local M = {}`, `M = {}` at the top of the file.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list . name: (_) @name))) @definition.variable)

(chunk
  (variable_declaration
    (variable_list . name: (_) @name)) @definition.variable)

; `local f = require("a.b").f`: the module's `f`, bound to `f`.
(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @import.name)
    (expression_list . value: (dot_index_expression
      table: (function_call
        name: (identifier) @_req
        (#eq? @_req "require")
        arguments: (arguments . (string content: (string_content) @import.path)))
      field: (identifier) @import.member)))) @import

; `local x = require("a.b")`: the module, bound to `x`.
(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @import.name)
    (expression_list . value: (function_call
      name: (identifier) @_req
      (#eq? @_req "require")
      arguments: (arguments . (string content: (string_content) @import.path)))))) @import

; `require "a.b"` anywhere else
(function_call
  name: (identifier) @_req
  (#eq? @_req "require")
  arguments: (arguments . (string content: (string_content) @import.path))) @import

(function_call
  name: (_) @call.name) @call

; Names given a value, for the calls on them: `local p = Path:new(...)` (or
; `Path.new(...)`) gives `p` a `Path`, so `p:rm()` is `Path:rm`; any other
; binding of the name (another value, a parameter, a loop variable) states
; no class, and a name bound to two keeps its calls as written.
(assignment_statement
  (variable_list . name: (identifier) @bind.name .)
  (expression_list . value: (function_call
    name: [
      (method_index_expression table: (identifier) @bind.class method: (identifier) @_new)
      (dot_index_expression table: (identifier) @bind.class field: (identifier) @_new)
    ]) .)
  (#eq? @_new "new")) @bind

(variable_list name: (identifier) @bind.name) @bind

(parameters name: (identifier) @bind.name) @bind

(for_numeric_clause name: (identifier) @bind.name) @bind
