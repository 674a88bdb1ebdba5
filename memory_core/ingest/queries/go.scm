; Go definitions for memhealth's code index (memory_core/ingest/code.py reads this file).
; memhealth.extensions: .go=go
; memhealth.exported: name-capitalized
; memhealth.wrappers: type_declaration
; memhealth.package-files: *
;
; Captures: @definition.<kind> the definition's node, @name its name, @receiver a method's
; receiver type (it qualifies the name), @module.name the package name. The doc is the
; comment just above; the package's doc is the comment above `package`.

(package_clause (package_identifier) @module.name)

(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (map_type)
  (slice_type) (array_type) (function_type) (channel_type) (pointer_type) (generic_type)]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type

(function_declaration name: (identifier) @name) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [(type_identifier) @receiver
    (pointer_type (type_identifier) @receiver)
    (generic_type type: (type_identifier) @receiver)
    (pointer_type (generic_type type: (type_identifier) @receiver))]))
  name: (field_identifier) @name) @definition.method
