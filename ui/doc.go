// Package ui will hold hookbox's status page: embedded templates and static
// files and their handlers (issue 5). Nothing is served from it yet; until
// then the state is visible through the logs and /healthz.
package ui
