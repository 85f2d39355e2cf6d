"""One module per rule (or per closely related pair); the engine discovers
every `Rule` subclass defined here, so adding a rule is adding a file (plus its
`rules/lint/<CODE>.yaml` entry and tests)."""
