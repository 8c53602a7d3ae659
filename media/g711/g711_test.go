package g711

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// readPairs reads "a b" lines (decimal or 0x-hex) from a testdata table,
// returning the pairs and any "sha256 <hex>" line.
func readPairs(t *testing.T, name string) (pairs [][2]int, sum string) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, b, _ := strings.Cut(line, " ")
		if a == "sha256" {
			sum = b
			continue
		}
		x, err1 := strconv.ParseInt(a, 0, 32)
		y, err2 := strconv.ParseInt(b, 0, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", name, line)
		}
		pairs = append(pairs, [2]int{int(x), int(y)})
	}
	return pairs, sum
}

var laws = []struct {
	name   string
	enc    func(int16) byte
	dec    func(byte) int16
	encAll func([]byte, []int16) []byte
	decAll func([]int16, []byte) []int16
}{
	{"mulaw", LinearToMulaw, MulawToLinear, EncodeMulaw, DecodeMulaw},
	{"alaw", LinearToAlaw, AlawToLinear, EncodeAlaw, DecodeAlaw},
}

func TestDecodeTables(t *testing.T) {
	for _, law := range laws {
		pairs, _ := readPairs(t, law.name+"_decode.txt")
		if len(pairs) != 256 {
			t.Fatalf("%s: %d decode entries", law.name, len(pairs))
		}
		for _, p := range pairs {
			if got := law.dec(byte(p[0])); int(got) != p[1] {
				t.Errorf("%s decode 0x%02X = %d, want %d", law.name, p[0], got, p[1])
			}
		}
	}
}

func TestEncodeVectors(t *testing.T) {
	for _, law := range laws {
		pairs, sum := readPairs(t, law.name+"_encode.txt")
		for _, p := range pairs {
			if got := law.enc(int16(p[0])); int(got) != p[1] {
				t.Errorf("%s encode %d = 0x%02X, want 0x%02X", law.name, p[0], got, p[1])
			}
		}
		all := make([]int16, 0, 65536)
		for x := -32768; x <= 32767; x++ {
			all = append(all, int16(x))
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(law.encAll(nil, all))); got != sum {
			t.Errorf("%s: sha256 of full encode = %s, want %s", law.name, got, sum)
		}
	}
}

// TestPublishedValues pins the values every G.711 implementation quotes.
func TestPublishedValues(t *testing.T) {
	tests := []struct {
		name string
		got  int
		want int
	}{
		{"mulaw decode 0x00", int(MulawToLinear(0x00)), -32124},
		{"mulaw decode 0x80", int(MulawToLinear(0x80)), 32124},
		{"mulaw decode 0xFF", int(MulawToLinear(0xFF)), 0},
		{"mulaw encode 0", int(LinearToMulaw(0)), int(MulawSilence)},
		{"mulaw encode clip 32767", int(LinearToMulaw(32767)), 0x80},
		{"mulaw encode clip -32768", int(LinearToMulaw(-32768)), 0x00},
		{"alaw decode 0xD5", int(AlawToLinear(0xD5)), 8},
		{"alaw decode 0x55", int(AlawToLinear(0x55)), -8},
		{"alaw decode 0xAA", int(AlawToLinear(0xAA)), 32256},
		{"alaw decode 0x2A", int(AlawToLinear(0x2A)), -32256},
		{"alaw encode 0", int(LinearToAlaw(0)), int(AlawSilence)},
		// One's-complement folding: -1 lands in the same cell as 0 with the sign flipped.
		{"mulaw encode -1", int(LinearToMulaw(-1)), 0x7F},
		{"alaw encode -1", int(LinearToAlaw(-1)), 0x55},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d (0x%X), want %d (0x%X)", tt.name, tt.got, tt.got, tt.want, tt.want)
		}
	}
}

// TestCodeRoundTrip checks decode then encode is the identity on codes,
// except the codes the law maps to the same level (µ-law ±0).
func TestCodeRoundTrip(t *testing.T) {
	for _, law := range laws {
		for c := range 256 {
			b := byte(c)
			got := law.enc(law.dec(b))
			if got != b && !(law.name == "mulaw" && b == 0x7F && got == 0xFF) {
				t.Errorf("%s: enc(dec(0x%02X)) = 0x%02X", law.name, b, got)
			}
		}
	}
}

func TestAppend(t *testing.T) {
	pcm := []int16{0, 1000, -1000, 32767}
	dst := EncodeMulaw([]byte{0xAB}, pcm)
	if len(dst) != 5 || dst[0] != 0xAB || dst[1] != 0xFF {
		t.Fatalf("EncodeMulaw append = % X", dst)
	}
	back := DecodeMulaw([]int16{7}, dst[1:])
	if len(back) != 5 || back[0] != 7 || back[1] != 0 {
		t.Fatalf("DecodeMulaw append = %v", back)
	}
}

func ExampleEncodeMulaw() {
	ulaw := EncodeMulaw(nil, []int16{0, 8000, -8000})
	fmt.Printf("% X\n", ulaw)
	fmt.Println(DecodeMulaw(nil, ulaw))
	// Output:
	// FF A0 20
	// [0 7932 -7932]
}
