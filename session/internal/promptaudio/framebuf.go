package promptaudio

import "sync"

// Reply audio is encoded into buffers drawn from pools by size (a 20 ms
// frame is 160 bytes of 8 kHz µ-law, 640 of 16 kHz PCM16, 1,920 of 48 kHz
// PCM16; a 120 ms frame of hello.audio.frame_ms is six times that, up to
// 11,520 bytes) instead of a new slice per frame, and the writer gives a
// frame's buffer back once it is written (if the transport keeps nothing
// of it, Capabilities.ReusableAudio) or dropped as stale. A frame lost on
// another path (a discarded queue) is left to the collector. The pools
// are the process's, so an idle call keeps no buffer.
var (
	frameBufs512 = sync.Pool{New: func() any { return new([512]byte) }}
	frameBufs1K  = sync.Pool{New: func() any { return new([1024]byte) }}
	frameBufs2K  = sync.Pool{New: func() any { return new([2048]byte) }}
	frameBufs4K  = sync.Pool{New: func() any { return new([4096]byte) }}
	frameBufs8K  = sync.Pool{New: func() any { return new([8192]byte) }}
	frameBufs12K = sync.Pool{New: func() any { return new([12288]byte) }}
)

// FrameBuf returns an empty buffer with room for n bytes, and whether it
// is pooled (n over 12 KiB is not).
func FrameBuf(n int) ([]byte, bool) {
	switch {
	case n <= 512:
		return frameBufs512.Get().(*[512]byte)[:0], true
	case n <= 1024:
		return frameBufs1K.Get().(*[1024]byte)[:0], true
	case n <= 2048:
		return frameBufs2K.Get().(*[2048]byte)[:0], true
	case n <= 4096:
		return frameBufs4K.Get().(*[4096]byte)[:0], true
	case n <= 8192:
		return frameBufs8K.Get().(*[8192]byte)[:0], true
	case n <= 12288:
		return frameBufs12K.Get().(*[12288]byte)[:0], true
	}
	return make([]byte, 0, n), false
}

// PutFrameBuf gives back a buffer frameBuf returned; one that was
// reallocated since (another capacity) is left to the collector.
func PutFrameBuf(b []byte) {
	switch cap(b) {
	case 512:
		frameBufs512.Put((*[512]byte)(b[:512]))
	case 1024:
		frameBufs1K.Put((*[1024]byte)(b[:1024]))
	case 2048:
		frameBufs2K.Put((*[2048]byte)(b[:2048]))
	case 4096:
		frameBufs4K.Put((*[4096]byte)(b[:4096]))
	case 8192:
		frameBufs8K.Put((*[8192]byte)(b[:8192]))
	case 12288:
		frameBufs12K.Put((*[12288]byte)(b[:12288]))
	}
}
