"""bench.quality's tables: means by group, and each model's gap to DeepFilterNet3 from the same rows."""

import contextlib
import io

import tensorflow as tf

from bench import quality


def rows():
  out = []
  for rate in (16000, 48000):
    for noise in ("white", "babble"):
      group = quality.Group(rate, noise, 5, "real")
      out.append(("noisy", group, dict(si_sdr=1.0, pesq=1.1, stoi=0.8)))
      out.append(("DeepFilterNet3", group, dict(si_sdr=5.0, pesq=2.0, stoi=0.9)))
      out.append(("default", group, dict(si_sdr=4.0 + (rate == 48000) + (noise == "white"),
                                         pesq=1.5, stoi=0.85)))
  return out


class QualityTablesTest(tf.test.TestCase):

  def test_means_by_group(self):
    by = quality.means(rows(), lambda g: g.rate == 48000)
    self.assertAllClose(by["default"]["si_sdr"], 5.5)
    self.assertAllClose(by["noisy"]["stoi"], 0.8)

  def test_the_gap_to_deepfilternet3_by_metric_rate_and_noise(self):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
      quality.print_gap(rows(), ["default"])
    lines = {line.split("|")[1].strip(): line.split("|")[2].strip()
             for line in printed.getvalue().splitlines() if line.startswith("| ")}
    self.assertEqual(lines["all"], "+0.00 / -0.50 / -0.050")
    self.assertEqual(lines["rate 16000"], "-0.50 / -0.50 / -0.050")
    self.assertEqual(lines["rate 48000"], "+0.50 / -0.50 / -0.050")
    self.assertEqual(lines["noise babble"], "-0.50 / -0.50 / -0.050")
    self.assertEqual(lines["noise white"], "+0.50 / -0.50 / -0.050")


if __name__ == "__main__":
  tf.test.main()
