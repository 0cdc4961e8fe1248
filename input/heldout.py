"""A held-out speech-in-noise set that the synthetic corpus generator never made, each utterance at its own rate (for bench.quality; needs the bench extra).

Speech: real recordings from Debian's alsa-utils (/usr/share/sounds/alsa, a
human voice at 48 kHz) and gcin-voice (Mandarin syllables a human voice
recorded at 44.1 kHz, each with its DC offset removed, strung into
utterances of 10), festival voices (kal: diphones cut from real recordings,
16 kHz; slt: HTS statistical, 32 kHz), and espeak-ng formant voices (22.05
kHz), speaking Harvard sentences, each kept at the rate it was recorded or
synthesized at, and high-passed at LOW_CUT_HZ; the noise is made (or
resampled) at that rate (input/heldout_noise.py): white, pink, brown, mains
hum, babble of held-out voices other than the target's, and alsa's recorded
Noise.wav. Everything comes from installed packages; nothing is downloaded.

A development set (`SPLITS["development"]`) for deciding a recipe without
looking at the held-out speech: other gcin syllables (none the held-out set
uses), the words ktuberling-data's volunteers recorded at 44.1 kHz (one
talker per language, WORDS_PER_UTTERANCE words strung into an utterance; no
held-out speaker), other Harvard sentences, other espeak-ng voices, other
noise draws. Every other recorded utterance is resampled to 48 kHz, the rate
the alsa voice brings to the held-out set. The alsa voice and its Noise.wav
recording stay held out, so the development set has no recorded noise.

Install the voices: apt-get install alsa-utils gcin-voice ktuberling-data festival festvox-kallpc16k festvox-us-slt-hts espeak-ng
"""

import dataclasses
import functools
import glob
import hashlib
import os
import shutil
import subprocess
from typing import Dict, List, Tuple

import numpy as np
from scipy import signal
from scipy.io import wavfile

from input import audio
from input import heldout_noise

ALSA_DIR = "/usr/share/sounds/alsa"
GCIN_DIR = "/usr/share/gcin-voice/ogg"  # one folder per Mandarin syllable, 44.1 kHz Vorbis
GCIN_UTTERANCES, GCIN_SYLLABLES = 4, 10
# One folder of recorded words (Vorbis, 44.1 kHz) per language, each a talker of its own.
WORDS_DIR = "/usr/share/ktuberling/sounds"
DEVELOPMENT_WORD_LANGUAGES = ("en", "de", "da", "el", "lt", "uk")
WORDS_PER_UTTERANCE = 4
# Speech is high-passed here: below it a recording holds breath pops and rumble, not speech
# (one gcin syllable, "peng2", has a fifth of its energy under 40 Hz), which SI-SDR would
# score as speech a denoiser must keep.
LOW_CUT_HZ = 40.0
SENTENCES = (
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It's easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "Four hours of steady work faced us.",
)
DEVELOPMENT_SENTENCES = (
    "The boy was there when the sun rose.",
    "A rod is used to catch pink salmon.",
    "The source of the huge river is the clear spring.",
    "Kick the ball straight and follow through.",
    "Help the woman get back to her feet.",
)
FESTIVAL_VOICES = {"festival-kal": "voice_kal_diphone",
                   "festival-slt": "voice_cmu_us_slt_arctic_hts"}
ESPEAK_VOICES = {"espeak-m": "en-us", "espeak-f": "en-us+f3", "espeak-gb": "en-gb+m3",
                 "espeak-f2": "en+f4"}
DEVELOPMENT_ESPEAK_VOICES = {"espeak-sc": "en-gb-scotland", "espeak-f5": "en-us+f5",
                             "espeak-nyc": "en-us-nyc+m2", "espeak-rp": "en-gb-x-rp+f2"}


@dataclasses.dataclass(frozen=True)
class Split:
  """Which speech and noise draws a set is made of."""
  name: str
  alsa: bool  # the real 48 kHz voice and its recorded noise
  festival_sentences: Tuple[str, ...]
  espeak_voices: Dict[str, str]
  espeak_sentences: Tuple[str, ...]
  word_languages: Tuple[str, ...]  # ktuberling-data's talkers, an utterance each
  speech_seed: int  # which gcin syllables and recorded words are drawn
  resample_48k: bool  # every other recorded utterance (gcin, words) resampled to 48 kHz
  noise_seed: int


SPLITS = {
    "heldout": Split("heldout", alsa=True, festival_sentences=SENTENCES[:3],
                     espeak_voices=ESPEAK_VOICES, espeak_sentences=SENTENCES[3:5],
                     word_languages=(), speech_seed=0, resample_48k=False, noise_seed=0),
    "development": Split("development", alsa=False,
                         festival_sentences=DEVELOPMENT_SENTENCES[:3],
                         espeak_voices=DEVELOPMENT_ESPEAK_VOICES,
                         espeak_sentences=DEVELOPMENT_SENTENCES[3:],
                         word_languages=DEVELOPMENT_WORD_LANGUAGES, speech_seed=1,
                         resample_48k=True, noise_seed=1),
}
INSTALL = ("apt-get install alsa-utils gcin-voice ktuberling-data festival festvox-kallpc16k "
           "festvox-us-slt-hts espeak-ng")


@dataclasses.dataclass(frozen=True)
class Utterance:
  source: str   # "real", "festival" or "espeak"
  voice: str
  signal: np.ndarray  # float32 at `rate`
  rate: int  # the rate it was recorded or synthesized at


def speech(work_dir: str, split: Split = SPLITS["heldout"]
           ) -> Tuple[List[Utterance], List[str]]:
  """The utterances of `split` at their own rates, and notes on sources that are not
  installed."""
  utterances, notes = [], []
  if split.alsa:
    real = sorted(f for f in glob.glob(os.path.join(ALSA_DIR, "*.wav"))
                  if not f.endswith("Noise.wav"))
    if not real:
      notes.append(f"no real recordings in {ALSA_DIR} ({INSTALL})")
    for path in real:
      utterances.append(Utterance("real", "alsa", *_load(path, low_cut_hz=LOW_CUT_HZ)))
  work_dir = os.path.join(work_dir, split.name) if split.name != "heldout" else work_dir
  os.makedirs(work_dir, exist_ok=True)
  utterances += _syllable_strings(work_dir, split, notes)
  utterances += _word_strings(work_dir, split, notes)
  for voice, command in _synthesizers(split, notes).items():
    for sentence in (split.festival_sentences if voice.startswith("festival")
                     else split.espeak_sentences):
      path = _cached(work_dir, voice, sentence)
      if not os.path.exists(path):
        subprocess.run(command(sentence, path + ".tmp.wav"), check=True,
                       capture_output=True, input=sentence.encode())
        os.replace(path + ".tmp.wav", path)
      utterances.append(Utterance(voice.split("-")[0], voice,
                                    *_load(path, low_cut_hz=LOW_CUT_HZ)))
  return utterances, notes


def _syllable_strings(work_dir: str, split: Split, notes: List[str]) -> List[Utterance]:
  """gcin-voice's recorded syllables, GCIN_SYLLABLES drawn (seed `split.speech_seed`, never
  one the held-out set draws unless this is it) and joined into each of GCIN_UTTERANCES
  utterances."""
  syllables = sorted(glob.glob(os.path.join(GCIN_DIR, "*", "*.ogg")))
  if not syllables:
    notes.append(f"no gcin-voice recordings in {GCIN_DIR} ({INSTALL})")
    return []
  return [_joined(_cached(work_dir, "gcin", *chosen), "gcin", chosen,
                  to_48k=split.resample_48k and index % 2 == 1)
          for index, chosen in enumerate(syllable_draws(syllables, split))]


def _word_strings(work_dir: str, split: Split, notes: List[str]) -> List[Utterance]:
  """An utterance of WORDS_PER_UTTERANCE words (seed `split.speech_seed`) from each of
  `split.word_languages`' recorded talkers (ktuberling-data)."""
  utterances = []
  for index, language in enumerate(split.word_languages):
    words = sorted(glob.glob(os.path.join(WORDS_DIR, language, "*.ogg")))
    if not words:
      notes.append(f"no recorded {language!r} words in {WORDS_DIR} ({INSTALL})")
      continue
    chosen = np.random.default_rng([split.speech_seed, index]).choice(
        words, WORDS_PER_UTTERANCE, replace=False)
    utterances.append(_joined(_cached(work_dir, f"words-{language}", *chosen),
                              f"words-{language}", list(chosen),
                              to_48k=split.resample_48k and index % 2 == 1))
  return utterances


def _cached(work_dir: str, voice: str, *made_from: str) -> str:
  """Where `voice`'s utterance made from `made_from` (recordings or a sentence) is kept: the
  name encodes them, so a changed draw or sentence never reuses another's file."""
  digest = hashlib.sha1("\n".join(made_from).encode()).hexdigest()[:12]
  return os.path.join(work_dir, f"{voice}-{digest}.wav")


def _joined(path: str, voice: str, recordings: List[str], *, to_48k: bool) -> Utterance:
  """`recordings` one after another as a real utterance, written once to `path`, at their
  own rate (44.1 kHz) or resampled to 48 kHz. Each recording's DC offset is removed first:
  some gcin syllables sit at -0.045 with an RMS of 0.05, an offset that is not speech but
  that SI-SDR would score as the part of the reference a denoiser must keep."""
  if not os.path.exists(path):
    pieces = [audio.read_file(recording) for recording in recordings]
    if len({rate for _, rate in pieces}) > 1:
      raise ValueError(f"{voice}'s recordings differ in rate: {recordings}")
    joined = np.concatenate([samples - samples.mean() for samples, _ in pieces])
    wavfile.write(path + ".tmp.wav", pieces[0][1], audio.to_int16(joined)[0])
    os.replace(path + ".tmp.wav", path)
  samples, rate = _load(path, low_cut_hz=LOW_CUT_HZ)
  if to_48k:
    samples, rate = audio.resample(samples, rate, 48000, name=path), 48000
  return Utterance("real", voice, samples, rate)


def syllable_draws(syllables: List[str], split: Split) -> List[List[str]]:
  """GCIN_UTTERANCES draws of GCIN_SYLLABLES of `syllables` each (seed `split.speech_seed`);
  another split than the held-out one draws from the syllables the held-out set does not."""
  def draws(pool, seed):
    rng = np.random.default_rng(seed)
    return [[pool[i] for i in rng.choice(len(pool), GCIN_SYLLABLES, replace=False)]
            for _ in range(GCIN_UTTERANCES)]

  held_out = draws(syllables, SPLITS["heldout"].speech_seed)
  if split.name == "heldout":
    return held_out
  used = {syllable for draw in held_out for syllable in draw}
  return draws([s for s in syllables if s not in used], split.speech_seed)


def _synthesizers(split: Split, notes: List[str]) -> Dict[str, callable]:
  commands = {}
  if shutil.which("text2wave"):
    for voice, scheme in FESTIVAL_VOICES.items():
      commands[voice] = lambda text, path, s=scheme: ["text2wave", "-eval", f"({s})", "-o",
                                                      path]
  else:
    notes.append(f"festival not installed ({INSTALL})")
  if shutil.which("espeak-ng"):
    for voice, name in split.espeak_voices.items():
      commands[voice] = lambda text, path, v=name: ["espeak-ng", "-v", v, "-w", path, text]
  else:
    notes.append(f"espeak-ng not installed ({INSTALL})")
  return commands


def _load(path: str, *, low_cut_hz: float = 0.0) -> Tuple[np.ndarray, int]:
  """`(samples, rate)` of a file at its own rate, high-passed at `low_cut_hz` if > 0 (4th
  order, zero phase), silence trimmed, peak 0.5."""
  samples, rate = audio.read_file(path)
  if low_cut_hz:
    samples = signal.sosfiltfilt(signal.butter(4, low_cut_hz, "highpass", fs=rate,
                                               output="sos"), samples)
  active = np.flatnonzero(np.abs(samples) > 1e-3 * np.abs(samples).max())
  samples = samples[max(0, active[0] - rate // 10):active[-1] + rate // 10]
  return (samples / np.abs(samples).max() * 0.5).astype(np.float32), rate


@functools.lru_cache(maxsize=4)
def _recording(rate: int) -> np.ndarray:
  """alsa-utils' recorded Noise.wav at `rate`, read and resampled once per rate."""
  samples, file_rate = _load(os.path.join(ALSA_DIR, "Noise.wav"))
  return audio.resample(samples, file_rate, rate, name="Noise.wav")


def available_noises(split: Split = SPLITS["heldout"]) -> Tuple[str, ...]:
  """heldout_noise.NOISES, less the recorded one when alsa-utils is not installed or `split`
  has no alsa."""
  if split.alsa and os.path.exists(os.path.join(ALSA_DIR, "Noise.wav")):
    return heldout_noise.NOISES
  return tuple(n for n in heldout_noise.NOISES if n != "recorded")


def mixtures(utterances: List[Utterance], snrs_db, split: Split = SPLITS["heldout"]):
  """Yields `(utterance, noise kind, snr_db, noisy, clean)` for every utterance x available
  noise x SNR, at the utterance's rate (babble of the other voices resampled to it; noisy
  and clean scaled together so that noisy peaks below 0.99), noise drawn with
  `split.noise_seed`."""
  rng = np.random.default_rng(split.noise_seed)
  for utterance in utterances:
    rate = utterance.rate
    others = [audio.resample(u.signal, u.rate, rate, name=u.voice)
              for u in utterances if u.voice != utterance.voice]
    clean = utterance.signal.astype(np.float64)
    for kind in available_noises(split):
      for snr_db in snrs_db:
        unit = heldout_noise.noise(kind, rng, len(clean), rate, others,
                                   _recording(rate) if kind == "recorded" else None)
        noisy = clean + unit * np.sqrt(np.mean(clean**2)) / 10 ** (snr_db / 20)
        scale = min(1.0, 0.99 / np.abs(noisy).max())
        yield (utterance, kind, snr_db, (noisy * scale).astype(np.float32),
               (clean * scale).astype(np.float32))
