// SHA-256 and strong entity tags live in the ContentHash target (so the stores need nothing else of
// TabLayout); they stay visible to every `import TabLayout` as before.
@_exported import ContentHash
