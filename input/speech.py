"""A source-filter speech synthesizer: random talkers saying random syllables, for the synthetic corpus.

Each talker has a size (male, female or child: formant scale and pitch
range), a voice quality (spectral tilt, breathiness, jitter, shimmer) and a
speaking rate. An utterance is phrases of syllables (onset consonant, vowel
or diphthong, coda) separated by pauses, built from a small phone inventory:
vowels at published average formant targets, glides, nasals, voiced and
voiceless fricatives and stops (closure, burst, aspiration). Phones become
frame-rate parameter tracks (pitch, formants, source gains, frication
colour), smoothed for coarticulation; three sources (a jittered glottal pulse
train, aspiration noise, frication noise) are each shaped per frame by a
minimum-phase filter (a cascade of formant resonances for voice and
aspiration, a resonance for frication) and overlap-added. The long-term
spectrum above 1 kHz is fitted to the development set's speech
(input.heldout), within about 2 dB per band relative to 250-1000 Hz.
"""

import dataclasses
from typing import Dict, List, Tuple

import numpy as np

FRAME_SECONDS = 0.01  # parameter-track hop; source gains are interpolated per sample
WINDOW_FRAMES = 2     # filter frames of 2 hops (20 ms), zero-padded to 40 ms
# Half-widths (seconds) of the smoothing that makes transitions: coarticulation of formants,
# onset/offset ramps of the sources, and the pitch contour.
FORMANT_GLIDE, GAIN_RAMP, PITCH_GLIDE = 0.045, 0.01, 0.06
# Frication and breath noise relative to the voice (times the phone gains below): with the
# voice's tilt they set the long-term spectrum above 3 kHz (about 15 dB under 250-1000 Hz).
FRICATION_LEVEL, BREATH_LEVEL = 14.0, 0.3
# The formants above F3 of an adult male's vocal tract (a uniform tube's, every 1 kHz), and
# their bandwidths: without them a cascade lacks their lift below their centres (Klatt's
# higher-pole correction), and voiced speech is several dB too weak at 3-8 kHz.
UPPER_FORMANTS = np.arange(3500.0, 8000.0, 1000.0)
UPPER_BANDWIDTHS = 250.0 + 100.0 * np.arange(len(UPPER_FORMANTS))
LIFT_HZ = 1000.0  # the voice's roll-off eases above this (Talker.high_lift)

# Average adult-male (F1, F2, F3) in Hz of American English vowels (Hillenbrand et al. 1995).
VOWELS = {
    "i": (342, 2322, 3000), "I": (427, 2034, 2684), "e": (476, 2089, 2691),
    "E": (580, 1799, 2605), "ae": (588, 1952, 2601), "a": (768, 1333, 2522),
    "O": (652, 997, 2538), "o": (497, 910, 2459), "U": (469, 1122, 2434),
    "u": (378, 997, 2343), "A": (623, 1200, 2550), "er": (474, 1379, 1710),
}
DIPHTHONGS = (("a", "I"), ("O", "I"), ("a", "U"), ("e", "I"), ("o", "U"))
# Formant loci (F1, F2, F3) during consonants, by place of articulation.
LOCI = {"labial": (250, 900, 2200), "dental": (300, 1400, 2600),
        "alveolar": (280, 1700, 2700), "postalveolar": (280, 2000, 2600),
        "velar": (280, 2100, 2300)}


@dataclasses.dataclass(frozen=True)
class Phone:
  """One phone's targets. Gains are linear source amplitudes; `noise_hz` centres frication."""
  kind: str                  # vowel, glide, nasal, fricative, stop
  formants: Tuple[float, float, float]
  duration: Tuple[float, float]  # seconds (min, max)
  voice: float = 0.0
  aspiration: float = 0.0
  frication: float = 0.0
  noise_hz: float = 0.0      # frication centre (0: flat, broadband)


CONSONANTS: Dict[str, Phone] = {
    "w": Phone("glide", (290, 610, 2150), (0.04, 0.08), voice=0.6),
    "y": Phone("glide", (260, 2070, 3020), (0.04, 0.08), voice=0.6),
    "l": Phone("glide", (360, 1300, 2700), (0.04, 0.09), voice=0.55),
    "r": Phone("glide", (330, 1060, 1380), (0.04, 0.09), voice=0.55),
    "m": Phone("nasal", (250, 1100, 2200), (0.05, 0.10), voice=0.3),
    "n": Phone("nasal", (250, 1500, 2500), (0.05, 0.09), voice=0.3),
    "ng": Phone("nasal", (250, 2000, 2600), (0.05, 0.09), voice=0.3),
    "f": Phone("fricative", LOCI["labial"], (0.07, 0.14), frication=0.05),
    "th": Phone("fricative", LOCI["dental"], (0.06, 0.12), frication=0.05),
    "s": Phone("fricative", LOCI["alveolar"], (0.07, 0.16), frication=0.15, noise_hz=5000),
    "sh": Phone("fricative", LOCI["postalveolar"], (0.07, 0.15), frication=0.15,
                noise_hz=3000),
    "h": Phone("fricative", (500, 1500, 2500), (0.04, 0.08), aspiration=0.25),
    "v": Phone("fricative", LOCI["labial"], (0.05, 0.10), voice=0.25, frication=0.03),
    "dh": Phone("fricative", LOCI["dental"], (0.04, 0.08), voice=0.25, frication=0.03),
    "z": Phone("fricative", LOCI["alveolar"], (0.06, 0.12), voice=0.25, frication=0.08,
               noise_hz=5000),
    "zh": Phone("fricative", LOCI["postalveolar"], (0.05, 0.10), voice=0.25,
                frication=0.08, noise_hz=3000),
    "p": Phone("stop", LOCI["labial"], (0.05, 0.10), frication=0.15, noise_hz=1000),
    "t": Phone("stop", LOCI["alveolar"], (0.05, 0.10), frication=0.2, noise_hz=4500),
    "k": Phone("stop", LOCI["velar"], (0.05, 0.10), frication=0.2, noise_hz=2200),
    "b": Phone("stop", LOCI["labial"], (0.04, 0.08), voice=0.08, frication=0.12,
               noise_hz=1000),
    "d": Phone("stop", LOCI["alveolar"], (0.04, 0.08), voice=0.08, frication=0.15,
               noise_hz=4500),
    "g": Phone("stop", LOCI["velar"], (0.04, 0.08), voice=0.08, frication=0.15,
               noise_hz=2200),
}
ONSETS, CODAS = list(CONSONANTS), ["m", "n", "ng", "l", "r", "s", "z", "t", "d", "k", "p",
                                   "f", "v", "th", "sh"]
SPEAKERS = {  # probability, formant scale, pitch range (Hz)
    "male": (0.45, (0.92, 1.05), (85.0, 155.0)),
    "female": (0.45, (1.10, 1.22), (165.0, 255.0)),
    "child": (0.10, (1.25, 1.40), (230.0, 300.0)),
}


@dataclasses.dataclass(frozen=True)
class Talker:
  """A voice: size, pitch, quality and rate."""
  formant_scale: float
  pitch_hz: float
  tilt_hz: float       # glottal spectrum corner, near the pitch
  tilt_power: float    # roll-off above it: 12 * power dB/octave before radiation
  high_lift: float     # less roll-off above LIFT_HZ: by 12 * lift dB/octave
  breathiness: float   # aspiration during voicing, relative to voice
  jitter: float        # pitch period variation (fraction)
  shimmer: float       # pulse amplitude variation (fraction)
  rate: float          # duration multiplier (< 1: faster)
  pitch_range: float   # intonation excursion (fraction of pitch)


def random_talker(rng: np.random.Generator) -> Talker:
  names = list(SPEAKERS)
  kind = names[rng.choice(len(names), p=[SPEAKERS[n][0] for n in names])]
  _, scale, pitch_range = SPEAKERS[kind]
  pitch_hz = rng.uniform(*pitch_range)
  return Talker(formant_scale=rng.uniform(*scale), pitch_hz=pitch_hz,
                tilt_hz=rng.uniform(0.3, 0.8) * pitch_hz, tilt_power=rng.uniform(1.0, 1.5),
                high_lift=rng.uniform(0.2, 0.4),
                breathiness=rng.uniform(0.01, 0.15),
                jitter=rng.uniform(0.003, 0.02), shimmer=rng.uniform(0.02, 0.1),
                rate=rng.uniform(0.75, 1.3), pitch_range=rng.uniform(0.08, 0.3))


def utterance(rng: np.random.Generator, num_samples: int, sample_rate: int,
              talker: Talker = None) -> np.ndarray:
  """`num_samples` of one talker speaking phrases with pauses; peak-normalised float64.

  Args:
    rng: the only source of randomness (same state, same audio).
    num_samples: output length.
    sample_rate: samples per second (8 kHz and up).
    talker: the voice; drawn from `rng` if None.
  """
  talker = talker or random_talker(rng)
  hop = max(1, int(round(FRAME_SECONDS * sample_rate)))
  num_frames = -(-num_samples // hop) + WINDOW_FRAMES
  tracks = _phone_tracks(rng, talker, num_frames, hop / sample_rate)
  audio = _render(rng, tracks, talker, hop, sample_rate)[:num_samples]
  peak = np.abs(audio).max()
  return audio / peak if peak > 0 else audio


def _phone_tracks(rng, talker: Talker, num_frames: int, frame_seconds: float):
  """Frame-rate tracks: formants [frames, 3], voice/aspiration/frication gains, noise_hz, pitch."""
  rows: List[Tuple[int, Phone, float]] = []  # (frames, phone, stress gain)
  frames = int(rng.uniform(0.0, 0.4) / frame_seconds)
  rows.append((frames, None, 0.0))
  while frames < num_frames:
    for phone, stress in _phrase(rng):
      length = max(1, int(rng.uniform(*phone.duration) * talker.rate / frame_seconds))
      rows.append((length, phone, stress))
      frames += length
    pause = max(1, int(rng.uniform(0.12, 0.7) / frame_seconds))
    rows.append((pause, None, 0.0))
    frames += pause
  formants = np.zeros([frames, 3])
  gains = np.zeros([frames, 3])
  noise_hz = np.zeros(frames)
  stress = np.zeros(frames)
  start, previous = 0, VOWELS["A"]
  for length, phone, accent in rows:
    end = start + length
    if phone is None:
      formants[start:end] = previous
    else:
      formants[start:end] = phone.formants
      previous = phone.formants
      gains[start:end] = _phone_gains(phone, length)
      noise_hz[start:end] = phone.noise_hz
      stress[start:end] = accent
    start = end
  formants = _smooth(formants, FORMANT_GLIDE / frame_seconds) * talker.formant_scale
  gains = _smooth(gains, GAIN_RAMP / frame_seconds)
  pitch = _pitch_track(rng, talker, rows, frames, frame_seconds)
  return dict(formants=formants[:num_frames], gains=gains[:num_frames] * (
      1 + stress[:num_frames, None]), noise_hz=noise_hz[:num_frames] * talker.formant_scale,
              pitch=pitch[:num_frames])


def _phrase(rng):
  """Phones of one phrase with a stress gain each: 2-9 syllables, one or two accented."""
  syllables = int(rng.integers(2, 10))
  accents = set(rng.choice(syllables, size=min(syllables, int(rng.integers(1, 3))),
                           replace=False))
  vowels = list(VOWELS)
  for index in range(syllables):
    stress = 0.5 if index in accents else 0.0
    if rng.uniform() < 0.75:
      yield CONSONANTS[ONSETS[rng.integers(len(ONSETS))]], stress
    long = 1.6 if stress else 1.0
    if rng.uniform() < 0.15:
      first, second = DIPHTHONGS[rng.integers(len(DIPHTHONGS))]
      yield _vowel(first, long * 0.6), stress
      yield _vowel(second, long * 0.6), stress
    else:
      yield _vowel(vowels[rng.integers(len(vowels))], long), stress
    if rng.uniform() < 0.35:
      yield CONSONANTS[CODAS[rng.integers(len(CODAS))]], stress


def _vowel(name: str, stretch: float) -> Phone:
  return Phone("vowel", VOWELS[name], (0.06 * stretch, 0.16 * stretch), voice=1.0)


def _phone_gains(phone: Phone, length: int) -> np.ndarray:
  """`[length, 3]` voice, aspiration, frication gains; stops get closure, burst, aspiration."""
  gains = np.tile([phone.voice, phone.aspiration, phone.frication], (length, 1))
  if phone.kind == "stop":
    burst = max(1, min(3, length // 4))
    closure = length - burst - (0 if phone.voice else max(1, length // 3))
    gains[:] = 0.0
    gains[:closure, 0] = phone.voice                   # voice bar of b, d, g
    gains[closure:closure + burst, 2] = phone.frication
    gains[closure + burst:, 1] = 0.3                    # aspiration of p, t, k
  return gains


def _smooth(tracks: np.ndarray, half_width: float) -> np.ndarray:
  """Hann-smooths each column over +-half_width frames (coarticulation, ramps)."""
  half_width = max(1, int(round(half_width)))
  kernel = np.hanning(2 * half_width + 3)[1:-1]
  kernel /= kernel.sum()
  padded = np.pad(tracks, [(half_width, half_width), (0, 0)], mode="edge")
  return np.stack([np.convolve(padded[:, c], kernel, mode="valid")
                   for c in range(tracks.shape[1])], axis=1)


def _pitch_track(rng, talker: Talker, rows, frames: int, frame_seconds: float) -> np.ndarray:
  """Declining phrase contours with accent peaks and slow wander, in Hz per frame."""
  contour = np.zeros(frames)
  start, phrase = 0, None

  def decline(first, last):
    contour[first:last] += np.linspace(0.5, -0.3, last - first) * talker.pitch_range

  for length, phone, stress in rows:
    if phone is None and phrase is not None:
      decline(phrase, start)
      phrase = None
    elif phone is not None:
      phrase = start if phrase is None else phrase
      if stress:
        contour[start:start + length] += talker.pitch_range * rng.uniform(0.3, 1.0)
    start += length
  if phrase is not None:
    decline(phrase, start)
  wander = np.cumsum(rng.normal(size=frames)) * 0.004 * np.sqrt(frame_seconds / 0.005)
  wander -= np.linspace(wander[0], wander[-1], frames)
  return talker.pitch_hz * np.exp(_smooth(contour[:, None], PITCH_GLIDE / frame_seconds)[:, 0]
                                  + wander)


def _render(rng, tracks, talker: Talker, hop: int, sample_rate: int) -> np.ndarray:
  """Filters the glottal and aspiration sources by the formants, the frication by its colour."""
  num_frames = len(tracks["pitch"])
  num_samples = num_frames * hop
  frame_times = (np.arange(num_frames) + 0.5) * hop
  at_samples = lambda track: np.interp(np.arange(num_samples), frame_times, track)
  pitch = at_samples(tracks["pitch"])
  voice, aspiration, frication = (at_samples(tracks["gains"][:, i]) for i in range(3))
  window = WINDOW_FRAMES * hop
  frequencies = np.fft.rfftfreq(2 * window, 1.0 / sample_rate)
  no_dc = frequencies**2 / (frequencies**2 + 60.0**2)  # 12 dB/octave under 60 Hz
  tract = _cascade(frequencies, tracks["formants"], talker) * no_dc  # [frames, bins]
  corner, power, lift = talker.tilt_hz, talker.tilt_power, talker.high_lift
  # Glottal flow (falling 12 * power dB/octave above the corner) differentiated by the lips'
  # radiation (+6 dB/octave): the harmonics near the pitch are the strongest, as in real voices.
  # Above LIFT_HZ it falls 12 * lift dB/octave less: fitted, with UPPER_FORMANTS and the
  # frication level, to recorded speech's long-term spectrum.
  glottal = _time_invariant(_glottal_pulses(rng, pitch, talker, sample_rate),
                            lambda f: (f / corner) / (1 + (f / corner) ** 2) ** power
                            * (1 + (f / LIFT_HZ) ** 2) ** lift, sample_rate)
  # The noise sources are set relative to the voice's level, so the tilt shapes only it.
  level = np.sqrt(np.mean(np.square(glottal)))
  breath = _time_invariant(rng.normal(size=num_samples), lambda f: 1 / np.sqrt(
      1 + (f / 1500.0) ** 2), sample_rate)
  breath *= (aspiration + talker.breathiness * voice) * level * BREATH_LEVEL / np.std(breath)
  out = _filter_frames(glottal * voice + breath, tract, hop, window)
  out += _filter_frames(rng.normal(size=num_samples) * frication * level * FRICATION_LEVEL,
                        _frication(frequencies, tracks["noise_hz"]), hop, window)
  return out


def _time_invariant(signal: np.ndarray, gain, sample_rate: int) -> np.ndarray:
  """`signal` through the minimum-phase filter with magnitude `gain(frequencies_hz)`."""
  frequencies = np.fft.rfftfreq(len(signal), 1.0 / sample_rate)
  response = _minimum_phase(gain(np.maximum(frequencies, 1.0)))
  return np.fft.irfft(np.fft.rfft(signal) * response, n=len(signal))


def _glottal_pulses(rng, pitch: np.ndarray, talker: Talker, sample_rate: int) -> np.ndarray:
  """A unit-impulse train at the (jittered) pitch, amplitude-shimmered."""
  cycles = np.cumsum(pitch * (1 + talker.jitter * rng.normal(size=len(pitch)) * 3)
                     / sample_rate)
  onsets = np.flatnonzero(np.diff(np.floor(cycles)) > 0) + 1
  pulses = np.zeros(len(pitch))
  pulses[onsets] = 1 + talker.shimmer * rng.normal(size=len(onsets))
  return pulses * np.sqrt(120.0 / pitch)  # pulses/s x energy/pulse: same power at any pitch


def _cascade(frequencies: np.ndarray, formants: np.ndarray, talker: Talker) -> np.ndarray:
  """|H| of cascaded resonances (F1-F3 from the track, UPPER_FORMANTS fixed per talker)."""
  upper = np.broadcast_to(UPPER_FORMANTS * talker.formant_scale,
                          (len(formants), len(UPPER_FORMANTS)))
  centres = np.concatenate([formants, upper], axis=1)[:, :, None]      # [frames, poles, 1]
  bandwidths = np.concatenate([[100.0, 120.0, 160.0], UPPER_BANDWIDTHS])[None, :, None] * (
      1 + 2 * talker.breathiness)
  ratio = frequencies[None, None] / centres
  magnitude = 1.0 / np.sqrt((1 - ratio**2) ** 2 + (frequencies[None, None] * bandwidths
                                                   / centres**2) ** 2)
  return np.prod(magnitude, axis=1)


def _frication(frequencies: np.ndarray, centres: np.ndarray) -> np.ndarray:
  """Frication colour per frame: a broad resonance at `centres` (0: flat above 1 kHz)."""
  centre = np.maximum(centres, 1.0)[:, None]
  peak = 1.0 / (1.0 + ((frequencies[None] - centre) / (0.3 * centre)) ** 2)
  flat = np.broadcast_to(frequencies[None] / np.sqrt(frequencies[None] ** 2 + 1000.0**2),
                         peak.shape) * 0.5
  return np.where(centres[:, None] > 0, peak, flat)


def _filter_frames(source: np.ndarray, magnitude: np.ndarray, hop: int,
                   window: int) -> np.ndarray:
  """Filters `source` by a per-frame magnitude response made minimum phase.

  Hann frames of `window` samples every `hop` (they sum to a constant) are
  zero-padded to twice their length, multiplied by their frame's minimum-phase
  response (so the filter rings causally and does not wrap) and overlap-added.
  """
  num_frames = magnitude.shape[0]
  blocks = 2 * window // hop
  padded = np.pad(source, (window // 2, 2 * window))
  starts = np.arange(num_frames) * hop
  hann = np.hanning(window + 1)[:-1]
  frames = padded[starts[:, None] + np.arange(window)[None]] * hann
  pieces = np.fft.irfft(np.fft.rfft(frames, n=2 * window) * _minimum_phase(magnitude),
                        n=2 * window).reshape(num_frames, blocks, hop)
  out = np.zeros([num_frames + blocks, hop])
  for block in range(blocks):
    out[block:block + num_frames] += pieces[:, block]
  out = out.reshape(-1)[window // 2:window // 2 + len(source)]
  return out * hop / hann.sum()


def _minimum_phase(magnitude: np.ndarray) -> np.ndarray:
  """The minimum-phase spectrum with the given magnitude (folded real cepstrum), per row."""
  bins = magnitude.shape[-1]
  size = 2 * (bins - 1)
  cepstrum = np.fft.irfft(np.log(np.maximum(magnitude, 1e-8)), n=size)
  fold = np.zeros(size)
  fold[0], fold[size // 2] = 1.0, 1.0
  fold[1:size // 2] = 2.0
  return np.exp(np.fft.rfft(cepstrum * fold, n=size))
