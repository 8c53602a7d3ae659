//go:build ignore

// gen.go writes the G.711 vector tables in this directory from a direct,
// sample-at-a-time rendering of the ITU-T G.191 rules (openitu/STL src/g711),
// deliberately independent of the package's table-driven code.
//
//	go run ./testdata/gen.go   (from media/g711)
package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
)

func ulawCompress(x int) int {
	var abs int
	if x < 0 {
		abs = ((-x - 1) >> 2) + 33
	} else {
		abs = (x >> 2) + 33
	}
	if abs > 8191 {
		abs = 8191
	}
	seg := 1
	for i := abs >> 6; i != 0; i >>= 1 {
		seg++
	}
	out := (8-seg)<<4 | (15 - (abs>>seg)&15)
	if x >= 0 {
		out |= 128
	}
	return out
}

func ulawExpand(b int) int {
	sign := 1
	if b < 128 {
		sign = -1
	}
	m := 255 - b // one's complement in 8 bits
	e := (m >> 4) & 7
	step := 4 << (e + 1)
	return sign * ((128 << e) + step*(m&15) + step/2 - 132)
}

func alawCompress(x int) int {
	var ix int
	if x < 0 {
		ix = (-x - 1) >> 4
	} else {
		ix = x >> 4
	}
	if ix > 15 {
		e := 1
		for ix > 31 {
			ix >>= 1
			e++
		}
		ix = ix - 16 + e*16
	}
	if x >= 0 {
		ix |= 128
	}
	return ix ^ 0x55
}

func alawExpand(b int) int {
	ix := (b ^ 0x55) & 127
	e := ix >> 4
	m := ix & 15
	if e > 0 {
		m += 16
	}
	m = m*16 + 8
	if e > 1 {
		m <<= e - 1
	}
	if b > 127 {
		return m
	}
	return -m
}

// boundaries are inputs at and around every decision threshold and the extremes.
func boundaries(compress func(int) int) []int {
	seen := map[int]bool{}
	var xs []int
	add := func(x int) {
		if x >= -32768 && x <= 32767 && !seen[x] {
			seen[x] = true
			xs = append(xs, x)
		}
	}
	for _, x := range []int{-32768, -32767, -32636, -32635, -32634, -1, 0, 1, 32634, 32635, 32636, 32767} {
		add(x)
	}
	prev := compress(-32768)
	for x := -32767; x <= 32767; x++ {
		c := compress(x)
		if c != prev {
			add(x - 1)
			add(x)
		}
		prev = c
	}
	return xs
}

func write(name string, f func(b *strings.Builder)) {
	var b strings.Builder
	f(&b)
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		panic(err)
	}
}

func main() {
	for _, law := range []struct {
		name     string
		compress func(int) int
		expand   func(int) int
	}{{"mulaw", ulawCompress, ulawExpand}, {"alaw", alawCompress, alawExpand}} {
		write("testdata/"+law.name+"_decode.txt", func(b *strings.Builder) {
			fmt.Fprintf(b, "# %s code -> linear, all 256 codes, from the G.191 expand rule\n", law.name)
			for c := range 256 {
				fmt.Fprintf(b, "0x%02X %d\n", c, law.expand(c))
			}
		})
		write("testdata/"+law.name+"_encode.txt", func(b *strings.Builder) {
			fmt.Fprintf(b, "# %s linear -> code at every decision threshold, from the G.191 compress rule\n", law.name)
			for _, x := range boundaries(law.compress) {
				fmt.Fprintf(b, "%d 0x%02X\n", x, law.compress(x))
			}
			all := make([]byte, 0, 65536)
			for x := -32768; x <= 32767; x++ {
				all = append(all, byte(law.compress(x)))
			}
			fmt.Fprintf(b, "# sha256 of the codes for every input -32768..32767 in order\nsha256 %x\n", sha256.Sum256(all))
		})
	}
}
