; Ruby for the query analyzer (see src/lang/query.rs for the captures).

(module
  name: (_) @name
  body: (_)? @body) @definition.namespace

(class
  name: (_) @name
  superclass: (superclass (_) @inherits)?
  body: (_)? @body) @definition.class

(singleton_class
  value: (_) @name
  body: (_)? @body) @definition.class

; minitest: `def test_saves`.
(method
  name: (identifier) @name
  (#match? @name "^test_")
  body: (_)? @body) @definition.test

(method
  name: (_) @name
  body: (_)? @body) @definition.function

(singleton_method
  name: (_) @name
  body: (_)? @body) @definition.function

; RSpec and Rails tests: `describe Store do`, `it "saves" do`, `test "x" do`.
(call
  method: (identifier) @_m
  (#any-of? @_m "describe" "context" "it" "specify" "test")
  arguments: (argument_list . [(string (string_content) @name) (constant) @name (scope_resolution) @name])
  block: (_) @body) @definition.test

(assignment
  left: (constant) @name) @definition.variable

(call
  method: (identifier) @_req
  (#any-of? @_req "require" "require_relative" "load")
  arguments: (argument_list . (string (string_content) @import.path))) @import

(call
  receiver: [(identifier) (constant) (self) (instance_variable) (scope_resolution)] @call.name
  method: (_) @call.name) @call

(call
  !receiver
  method: (_) @call.name) @call

(call
  receiver: [(call) (parenthesized_statements) (string) (array) (hash) (integer)]
  method: (_) @call.name) @call
