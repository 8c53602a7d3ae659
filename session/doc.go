// Package session runs voice calls: the call and its turns, generations
// and barge-in, in the protocol of package session/wire.
//
// An Engine admits each call through the session stage, then each turn's
// work through the stages of its pipeline (package stages). The pipeline
// is a list of steps (pipeline.go, turnSteps: recognition for a speech
// turn, the model, synthesis sentence by sentence), and a new stage is one
// entry. Every step runs one loop on a goroutine of the turn's: each item
// of its inbox (a transcript, a sentence) is admitted, worked under its
// lease until the backend returns, and reported; what the work makes goes
// to the next inbox at once, so a reply streams (stream.go). A step stops
// at its first refusal, failure or cancel; the steps before it are halted,
// the steps after it finish what they hold, and once all have returned
// one exit ends the turn (endRun) with the truth about what was heard.
// A call's generation advances when the caller barges in: queued work of the
// old generation is cancelled at once and active work loses its right to
// speak at once, but every lease is held until its backend returns, which is
// the evidence that it stopped using its resource.
//
// # Writing is single and generation-checked
//
// Everything a call sends goes through one bounded outbound queue drained by
// one writer goroutine (package internal/outbound: the call gives it its
// transport and its generation and premise, and queues frames). Frames that speak for a generation (text,
// audio_start, audio, audio_end) carry it, and the writer drops any frame
// whose generation is no longer current at the moment it dequeues it, which
// is the last step before the write. Because `interrupted` is queued only
// after the generation has advanced, no frame of an older generation can
// follow it on the wire. Dropped frames are counted as stale chunks.
//
// The queue has two lanes: audio, paced, in order; and every other
// message, written when the event happens, ahead of queued audio and while
// the writer waits to pace a frame. An offer, a fallback outcome or an
// error so overtakes the audio queued before it; its AudioBefore says
// when that audio has been handed to the transport, for a transport that
// speaks after it. A transport's own lines (a phone's keypad menu, its
// rendering of a text-only prompt, its last line as a refused call ends,
// Capabilities.Closing) are queued through the same writer
// (Capabilities.Voice, menuaudio.go): nothing reaches a caller around it. Prompt
// audio carries the premise it was spoken for instead of a generation
// (premise.go; the check is the queue's): once
// the call's state changes, the writer cuts it the same way. Prompt audio
// is paced by the engine's shared pacer (package internal/pace): the writer parks
// between frames instead of waiting, and is resumed on a worker of the
// pacer, still the call's only writer, with the same checks. On a
// transport whose writes never wait for playback (Capabilities.InlineAudio,
// the WebSocket), a reply's frame that finds no writer running is written
// by the goroutine that made it, which is the writer for that while: one
// writer at a time still, with the same checks, and no goroutine wake-up
// per frame.
//
// # Seams
//
// A Transport carries typed client events in and server events and audio out,
// so every wire protocol (the native WebSocket, Twilio Media Streams, WebRTC
// data channels) drives the same Call, through Engine.Start or Engine.Run. What a transport can do beyond that (an undecoded reader,
// Abort, Interrupt, a keypad) it declares in Capabilities when it starts its
// call; the call never discovers abilities by type assertion. Stage
// admission goes through one contract, stages.Gate (Config.NewGate builds
// one per stage: in process, on Redis, or a baseline policy to measure
// against), which the engine wraps in its own decorators (drain,
// quarantine); the conformance suite runs on that wiring. What a refused
// caller hears comes from a Fallback (Prompts, or package session/offer's).
//
// # One owner per call
//
// A call's conversation has one owner (owner.go) at a time: whichever
// goroutine posts an event to its idle mailbox, until the mailbox is
// empty (no goroutine of its own: an idle call holds none). The phase,
// the pending and speaking turns, the ids in flight and the generation's
// context are the owner's alone, with no lock. The reader (which keeps
// hello, caller audio, with no hand-off per frame, and the Fallback's
// messages), the admission goroutine, the turns' goroutines (backend
// work) and the call's end post events, applied one at a time in the
// order posted. The owner keeps: no turn runs before the turn stages are
// ready or after the call stopped; turns run one at a time, in order, the
// next once the one before returned; a barge-in advances the generation
// before `interrupted` is queued and ends the pending and speaking turns
// at once (leases held until their backends return); a turn leaves the
// flight before its turn_end is queued; after evEnd nothing starts, and
// the end waits for the owner.
package session
