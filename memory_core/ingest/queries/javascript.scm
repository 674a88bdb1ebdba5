; JavaScript definitions for memhealth's code index (memory_core/ingest/code.py reads this file).
; memhealth.extensions: .js=javascript .mjs=javascript .cjs=javascript .jsx=javascript
; memhealth.exported: capture
; memhealth.wrappers: export_statement lexical_declaration variable_declaration
;
; Captures: @definition.<kind> the definition's node, @name its name, @exported when the
; definition is exported. The doc is the comment just above (JSDoc or line comments).

(class_declaration name: (identifier) @name) @definition.class
(export_statement declaration: (class_declaration) @definition.class) @exported
(export_statement value: (class name: (identifier) @name) @definition.class) @exported

(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(export_statement declaration: [(function_declaration) (generator_function_declaration)] @definition.function) @exported

(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression) (class)]) @definition.function
(export_statement declaration: (lexical_declaration (variable_declarator value: [(arrow_function) (function_expression) (class)]) @definition.function)) @exported

(method_definition name: (property_identifier) @name) @definition.method
