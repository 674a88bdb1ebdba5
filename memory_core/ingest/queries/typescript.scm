; TypeScript definitions for memhealth's code index (memory_core/ingest/code.py reads this file).
; memhealth.extensions: .ts=typescript .mts=typescript .cts=typescript .tsx=tsx
; memhealth.exported: capture
; memhealth.wrappers: export_statement lexical_declaration variable_declaration
;
; Captures: @definition.<kind> the definition's node, @name its name, @exported when the
; definition is exported. The doc is the comment just above (TSDoc or line comments).

(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(export_statement declaration: [(class_declaration) (abstract_class_declaration)] @definition.class) @exported

(interface_declaration name: (type_identifier) @name) @definition.interface
(export_statement declaration: (interface_declaration) @definition.interface) @exported

(type_alias_declaration name: (type_identifier) @name) @definition.type
(export_statement declaration: (type_alias_declaration) @definition.type) @exported

(enum_declaration name: (identifier) @name) @definition.enum
(export_statement declaration: (enum_declaration) @definition.enum) @exported

(function_declaration name: (identifier) @name) @definition.function
(export_statement declaration: (function_declaration) @definition.function) @exported

(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @definition.function
(export_statement declaration: (lexical_declaration (variable_declarator value: [(arrow_function) (function_expression)]) @definition.function)) @exported

(method_definition name: (property_identifier) @name) @definition.method
