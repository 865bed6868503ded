; Elixir for the query analyzer (see src/lang/query.rs for the captures).
; Clauses of one function (`def f(0)`, `def f(n)`) merge (merge_clauses).

(call
  target: (identifier) @_k
  (#eq? @_k "defmodule")
  (arguments . (alias) @name)
  (do_block
    .
    (unary_operator
      operand: (call
        target: (identifier) @_md
        (#eq? @_md "moduledoc")
        (arguments . (string (quoted_content) @doc))))) @body) @definition.namespace

(call
  target: (identifier) @_k
  (#any-of? @_k "defmodule" "defprotocol" "defimpl")
  (arguments . (alias) @name)
  (do_block)? @body) @definition.namespace

; `@doc` above a definition, directly or with its `@spec` between them
; (plug's style).
((unary_operator
   operand: (call
     target: (identifier) @_d
     (#eq? @_d "doc")
     (arguments . (string (quoted_content) @doc))))
 .
 (unary_operator
   operand: (call
     target: (identifier) @_s
     (#eq? @_s "spec")))?
 .
 (call
   target: (identifier) @_k
   (#any-of? @_k "def" "defp")
   (arguments
     .
     [(call target: (identifier) @name)
      (identifier) @name
      (binary_operator left: (call target: (identifier) @name))])
   (do_block)? @body) @definition.function)

(call
  target: (identifier) @_k
  (#any-of? @_k "defmacro" "defmacrop")
  (arguments
    .
    [(call target: (identifier) @name)
     (identifier) @name
     (binary_operator left: (call target: (identifier) @name))])
  (do_block)? @body) @definition.macro

(call
  target: (identifier) @_k
  (#any-of? @_k "def" "defp")
  (arguments
    .
    [(call target: (identifier) @name)
     (identifier) @name
     (binary_operator left: (call target: (identifier) @name))])
  (do_block)? @body) @definition.function

; ExUnit: `describe "..." do`, `test "..." do`.
(call
  target: (identifier) @_t
  (#any-of? @_t "test" "describe")
  (arguments . (string (quoted_content) @name))
  (do_block) @body) @definition.test

(call
  target: (identifier) @_k
  (#any-of? @_k "alias" "import" "require" "use")
  (arguments . (alias) @import.path)) @import

; A typespec names types and the function it describes: no calls.
(unary_operator
  operand: (call
    target: (identifier) @_t
    (#any-of? @_t "spec" "type" "typep" "opaque" "callback" "macrocallback"))) @no_calls

(call
  target: (identifier) @call.name
  (#not-any-of? @call.name
    "def" "defp" "defmacro" "defmacrop" "defmodule" "defprotocol" "defimpl" "defstruct" "defdelegate"
    "defexception" "defguard" "if" "unless" "case" "cond" "with" "for" "try" "receive" "quote" "unquote"
    "fn" "raise" "alias" "import" "require" "use" "describe" "test" "setup"
    "moduledoc" "doc" "typedoc" "spec" "type" "typep" "opaque" "impl" "behaviour" "callback" "derive")) @call

(call
  target: (dot
    left: [(alias) (identifier)] @call.name
    right: (identifier) @call.name)) @call
