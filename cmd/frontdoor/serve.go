package main

import (
	"context"
	"errors"
	"io"
)

// runServe is filled in by its own issue.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not built yet")
}
