package stub_test

import (
	"context"
	"fmt"

	"github.com/frontdoorhq/frontdoor/session/backend"
	"github.com/frontdoorhq/frontdoor/session/backend/stub"
)

func ExampleModel() {
	m := stub.NewModel(stub.Settings{Tokens: 3})
	defer m.Close()
	_ = m.Reply(context.Background(), backend.Turn{Text: "good morning"}, func(d string) error {
		fmt.Printf("%q\n", d)
		return nil
	})
	// Output:
	// "good"
	// " morning"
	// " good."
}
