package backends_test

import (
	"flag"
	"fmt"

	"github.com/frontdoorhq/frontdoor/cmd/frontdoor/backends"
)

// How frontdoor serve builds its backends from its command line.
func ExampleNew() {
	var cfg backends.Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.Flags(fs)
	_ = fs.Parse([]string{"-model=stub", "-synth=stub", "-recognize=stub", "-stub-tokens=4"})
	set, err := backends.New(cfg, nil) // or a prometheus.Registerer
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	fmt.Println(set.ModelName, set.SynthName, set.RecognizeName)
	// Output: stub stub stub
}
