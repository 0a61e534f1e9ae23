// Package tools pins herald's development tools (sqlc, task) in a module of
// their own, so that a service importing the herald client pulls none of them.
// Run them with: go tool -modfile=internal/tools/go.mod sqlc|task.
package tools
