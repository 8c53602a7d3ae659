// Package g711 encodes and decodes ITU-T G.711 µ-law and A-law, bit-exact with
// the ITU-T G.191 reference implementation (openitu/STL, src/g711).
//
// Linear samples are signed 16-bit. µ-law uses the 14 most significant bits
// (bias 33 in 14-bit units, i.e. 0x84 in 16-bit units; inputs beyond ±32635
// clip), A-law the 13 most significant bits. Negative inputs are folded with a
// one's complement, as the reference does, which is where naive encoders
// disagree by one step.
package g711
