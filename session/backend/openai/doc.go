// Package openai adapts OpenAI-compatible HTTP servers (OpenAI, vLLM,
// llama.cpp's server, Ollama, whisper.cpp's server and others) to the
// backend interfaces:
//
//   - Model: streaming chat completions (/v1/chat/completions), with a
//     system prompt and the turn's bounded history;
//   - Synthesizer: /v1/audio/speech with response_format "pcm" (24 kHz
//     PCM16 mono), streamed as the body arrives;
//   - Recognizer: /v1/audio/transcriptions with a WAV upload.
//
// It is built on github.com/openai/openai-go/v3 with retries off: a 429 or 503
// comes back at once as backend.ErrOverloaded with its Retry-After, so the
// stage decides, within the turn's deadline, what to do. Each call's response
// body is closed before the call returns, which is the release evidence the
// stage lease waits for; cancellation (a barge-in) aborts the request and
// closes the connection. A stream that makes no progress within the stall
// timeout ends with backend.ErrStalled.
//
// API keys are read from the environment variable a setting names and never
// appear in errors or logs.
package openai
