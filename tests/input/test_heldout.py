"""Tests for input.heldout: the mixtures have their SNRs and rates, and the development set shares no speech with the held-out one."""

import dataclasses
import os
from unittest import mock

import numpy as np
from scipy.io import wavfile
import tensorflow as tf

from input import heldout

RATE = 16000


class HeldoutTest(tf.test.TestCase):

  def test_speech_is_loaded_without_dc_and_rumble(self):
    # A recording's DC offset and breath pops are not speech: the loader cuts below
    # LOW_CUT_HZ and leaves the speech band as it was.
    t = np.arange(2 * RATE) / RATE
    recording = 0.2 + 0.2 * np.sin(2 * np.pi * 15.0 * t) + 0.2 * np.sin(2 * np.pi * 300.0 * t)
    path = os.path.join(self.get_temp_dir(), "speech.wav")
    wavfile.write(path, RATE, np.round(recording * 32767).astype(np.int16))
    samples, rate = heldout._load(path, low_cut_hz=heldout.LOW_CUT_HZ)  # pylint: disable=protected-access
    self.assertEqual(rate, RATE)
    self.assertAllClose(np.abs(samples).max(), 0.5, atol=1e-6)
    power = np.abs(np.fft.rfft(samples[RATE // 2:-RATE // 2] * np.hanning(RATE))) ** 2
    hz = np.fft.rfftfreq(RATE, 1 / RATE)
    self.assertLess(10 * np.log10(power[hz < 20].sum() / power.sum()), -30.0)
    self.assertGreater(power[(hz > 290) & (hz < 310)].sum() / power.sum(), 0.99)

  def test_mixtures_hit_every_snr(self):
    t = np.arange(RATE) / RATE
    utterances = [heldout.Utterance("real", voice, (0.3 * np.sin(2 * np.pi * f * t)
                                                    ).astype(np.float32), RATE)
                  for voice, f in (("a", 200.0), ("b", 310.0))]
    seen = set()
    for utterance, kind, snr_db, noisy, clean in heldout.mixtures(utterances, (0, 10)):
      if kind == "recorded":
        continue  # only where alsa-utils is installed
      seen.add((utterance.voice, kind, snr_db))
      measured = 10 * np.log10(np.sum(clean.astype(np.float64) ** 2)
                               / np.sum((noisy.astype(np.float64) - clean) ** 2))
      self.assertAllClose(measured, snr_db, atol=0.01, msg=(kind, snr_db))
      self.assertLess(np.abs(noisy).max(), 0.99 + 1e-6)
    self.assertLen(seen, 2 * 5 * 2)

  def test_each_mixture_is_at_its_utterances_own_rate(self):
    utterances = [heldout.Utterance("real", voice, (0.3 * np.sin(
        2 * np.pi * 200.0 * np.arange(rate) / rate)).astype(np.float32), rate)
                  for voice, rate in (("a", 16000), ("b", 48000))]
    for utterance, kind, _, noisy, clean in heldout.mixtures(utterances, (5,)):
      self.assertEqual(len(noisy), utterance.rate, msg=(utterance.voice, kind))
      self.assertEqual(len(clean), utterance.rate)
      if kind == "babble":  # the other voice's 200 Hz tone, resampled to this rate
        power = np.abs(np.fft.rfft(noisy.astype(np.float64) - clean)) ** 2
        self.assertGreater(power[200] / power.sum(), 0.99)

  def test_the_development_set_shares_no_speech_with_the_held_out_set(self):
    development, held_out = heldout.SPLITS["development"], heldout.SPLITS["heldout"]
    syllables = [f"s{i:04d}/x.ogg" for i in range(1200)]
    used = {s for draw in heldout.syllable_draws(syllables, held_out) for s in draw}
    drawn = [s for draw in heldout.syllable_draws(syllables, development) for s in draw]
    self.assertLen(drawn, heldout.GCIN_UTTERANCES * heldout.GCIN_SYLLABLES)
    self.assertEmpty(used.intersection(drawn))
    self.assertEmpty(set(development.festival_sentences + development.espeak_sentences)
                     & set(held_out.festival_sentences + held_out.espeak_sentences))
    self.assertEmpty(set(development.espeak_voices.values())
                     & set(held_out.espeak_voices.values()))
    self.assertFalse(development.alsa)  # the real 48 kHz voice and its recording
    self.assertEmpty(held_out.word_languages)  # ktuberling's talkers are development's only
    self.assertNotEmpty(development.word_languages)
    self.assertNotIn("recorded", heldout.available_noises(development))

  def test_recorded_words_are_strung_into_an_utterance_per_talker(self):
    words_dir = self.create_tempdir().full_path
    t = np.arange(4410) / 44100  # 0.1 s
    for language, base_hz in (("en", 200.0), ("de", 300.0)):
      os.makedirs(os.path.join(words_dir, language))
      for k in range(6):  # WAV content under the package's .ogg names: decoded by content
        wavfile.write(os.path.join(words_dir, language, f"word{k}.ogg"), 44100, np.round(
            8000 * np.sin(2 * np.pi * (base_hz + 10 * k) * t)).astype(np.int16))
    split = dataclasses.replace(heldout.SPLITS["development"],
                                word_languages=("en", "de", "fr"))
    notes = []
    with mock.patch.object(heldout, "WORDS_DIR", words_dir):
      utterances = heldout._word_strings(self.create_tempdir().full_path, split, notes)  # pylint: disable=protected-access
      again = heldout._word_strings(self.create_tempdir().full_path, split, [])  # pylint: disable=protected-access
    self.assertEqual([u.voice for u in utterances], ["words-en", "words-de"])
    self.assertEqual([u.rate for u in utterances], [44100, 48000])  # every other at 48 kHz
    self.assertAllClose(len(utterances[0].signal) / 44100,
                        heldout.WORDS_PER_UTTERANCE * 0.1, atol=0.02)
    for first, second in zip(utterances, again):
      self.assertAllEqual(first.signal, second.signal)  # the same draw every time
    self.assertLen(notes, 1)
    self.assertIn("'fr'", notes[0])
    # Another draw in the same work_dir is made afresh, never read from the first's file.
    reseeded = dataclasses.replace(split, speech_seed=split.speech_seed + 1)
    with mock.patch.object(heldout, "WORDS_DIR", words_dir):
      cached = self.create_tempdir().full_path
      heldout._word_strings(cached, split, [])  # pylint: disable=protected-access
      redrawn = heldout._word_strings(cached, reseeded, [])  # pylint: disable=protected-access
      fresh = heldout._word_strings(self.create_tempdir().full_path, reseeded, [])  # pylint: disable=protected-access
    for first, second, third in zip(utterances, redrawn, fresh):
      self.assertNotAllClose(first.signal, second.signal)
      self.assertAllEqual(second.signal, third.signal)

  def test_the_held_out_draws_are_the_ones_it_always_had(self):
    # seed 0, one generator across the utterances: the held-out set may not move
    syllables = [f"s{i:04d}" for i in range(1200)]
    rng = np.random.default_rng(0)
    expected = [[syllables[i] for i in rng.choice(1200, heldout.GCIN_SYLLABLES,
                                                  replace=False)]
                for _ in range(heldout.GCIN_UTTERANCES)]
    self.assertEqual(heldout.syllable_draws(syllables, heldout.SPLITS["heldout"]), expected)

  def test_the_development_noise_is_another_draw(self):
    utterances = [heldout.Utterance("real", "a", (0.3 * np.sin(2 * np.pi * 200.0 * np.arange(
        RATE) / RATE)).astype(np.float32), RATE)]
    first = {name: [noisy for _, kind, _, noisy, _ in heldout.mixtures(
        utterances, (5,), split) if kind == "white"][0]
             for name, split in heldout.SPLITS.items()}
    self.assertGreater(np.abs(first["heldout"] - first["development"]).max(), 0.1)


if __name__ == "__main__":
  tf.test.main()
