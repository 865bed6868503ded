; Lua for the query analyzer (see src/lang/query.rs for the captures).

(function_declaration
  name: (_) @name
  body: (_)? @body) @definition.function

; `local M = {}`, `M = {}` at the top of the file.
(chunk
  (variable_declaration
    (assignment_statement
      (variable_list . name: (_) @name))) @definition.variable)

(chunk
  (variable_declaration
    (variable_list . name: (_) @name)) @definition.variable)

; `local x = require("a.b")`, `require "a.b"`
(function_call
  name: (identifier) @_req
  (#eq? @_req "require")
  arguments: (arguments . (string content: (string_content) @import.path))) @import

(function_call
  name: (_) @call.name) @call
