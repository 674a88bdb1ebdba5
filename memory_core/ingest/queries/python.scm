; Python definitions for memhealth's code index (memory_core/ingest/code.py reads this file).
; memhealth.extensions: .py=python .pyi=python
; memhealth.exported: name-public
; memhealth.wrappers: decorated_definition
; memhealth.package-files: __init__.py
;
; Captures: @definition.<kind> the definition's node, @name its name, @doc its docstring,
; @module.doc the file's docstring. Kinds: class, function (a function in a class is a method).

(module . (comment)* . (string) @module.doc)

(class_definition name: (identifier) @name) @definition.class
(class_definition body: (block . (string) @doc)) @definition.class

(function_definition name: (identifier) @name) @definition.function
(function_definition body: (block . (string) @doc)) @definition.function
