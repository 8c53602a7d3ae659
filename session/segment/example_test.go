package segment_test

import (
	"fmt"

	"github.com/frontdoorhq/frontdoor/session/segment"
)

// A model's deltas go in as they stream; each sentence comes out as soon
// as it is complete, and Flush gives what is left when the reply ends.
func ExampleSplitter() {
	var s segment.Splitter
	for _, delta := range []string{"Dr.", " Lee", " is", " in", " at", " 9.", "30.", " Shall", " I", " book", " it?", " Thanks"} {
		for _, seg := range s.Push(delta) {
			fmt.Println(seg)
		}
	}
	fmt.Println(s.Flush())
	// Output:
	// Dr. Lee is in at 9.30.
	// Shall I book it?
	// Thanks
}
