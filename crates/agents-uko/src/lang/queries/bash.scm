; Bash for the query analyzer (see src/lang/query.rs for the captures).

(function_definition
  name: (word) @name
  body: (_) @body) @definition.function

(program
  (variable_assignment
    name: (variable_name) @name) @definition.variable)

(program
  (declaration_command
    (variable_assignment
      name: (variable_name) @name)) @definition.variable)

; `source lib.sh`, `. ./lib.sh`
(command
  name: (command_name (word) @_src)
  (#any-of? @_src "source" ".")
  argument: [(word) (string) (raw_string)] @import.path) @import

; Commands, without the shell's own plumbing.
(command
  name: (command_name (word) @call.name)
  (#not-any-of? @call.name "echo" "printf" "cd" "test" "[" "[[" "local" "export" "return" "exit" "set" "shift" "read" "true" "false" "source" "." "eval" "exec" "unset" "declare" "shopt" "trap" "wait")) @call
