// Package scripts embeds the Lua source of every built-in algorithm, one .lua file per algorithm.
// Each file's header says what it implements, which clock it reads, its keys, its reply and what
// clock skew does to it.
package scripts

import "embed"

// FS holds every *.lua file of this folder.
//
//go:embed *.lua
var FS embed.FS
