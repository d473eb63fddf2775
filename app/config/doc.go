// Package config reads hookbox's config file into the domain's
// *app.Config: it decodes the TOML, refuses unknown keys, resolves paths,
// the command line's overrides and the *_env keys, validates every table,
// and answers the preflight checks (file modes, data directory, listen
// address) of `hookbox check` and `serve`.
package config
