; Rust definitions for memhealth's code index (memory_core/ingest/code.py reads this file).
; memhealth.extensions: .rs=rust
; memhealth.exported: capture
; memhealth.skip: attribute_item
; memhealth.package-files: mod.rs lib.rs
;
; Captures: @definition.<kind> the definition's node, @name its name, @exported for `pub`,
; @scope an impl block (it qualifies its methods' names). The doc is the `///` comment just
; above (attributes in between are skipped); the module's doc is its leading `//!` lines.

(struct_item (visibility_modifier)? @exported name: (type_identifier) @name) @definition.struct
(enum_item (visibility_modifier)? @exported name: (type_identifier) @name) @definition.enum
(union_item (visibility_modifier)? @exported name: (type_identifier) @name) @definition.struct
(trait_item (visibility_modifier)? @exported name: (type_identifier) @name) @definition.trait
(type_item (visibility_modifier)? @exported name: (type_identifier) @name) @definition.type
(mod_item (visibility_modifier)? @exported name: (identifier) @name body: (declaration_list)) @definition.module
(function_item (visibility_modifier)? @exported name: (identifier) @name) @definition.function
(function_signature_item (visibility_modifier)? @exported name: (identifier) @name) @definition.function
(macro_definition name: (identifier) @name) @definition.function

(impl_item type: [(type_identifier) @name (generic_type type: (type_identifier) @name)
  (scoped_type_identifier name: (type_identifier) @name)]) @scope
