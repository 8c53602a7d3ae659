package main

import (
	"context"
	"errors"
	"io"
)

// runLoad is filled in by its own issue.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not built yet")
}
