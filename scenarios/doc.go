// Package scenarios reads scenario files.
package scenarios
