"""Tests for common.files: atomic text and JSON writes, error reasons."""

import json
import os

import tensorflow as tf

from common import files


class FilesTest(tf.test.TestCase):

  def test_json_round_trip_creates_directories_and_leaves_no_temporary(self):
    path = os.path.join(self.create_tempdir().full_path, "a", "b", "report.json")
    self.assertEqual(files.write_json(path, {"x": 1.5, "y": [1, 2]}), path)
    with open(path) as f:
      self.assertEqual(json.load(f), {"x": 1.5, "y": [1, 2]})
    self.assertEqual(os.listdir(os.path.dirname(path)), ["report.json"])
    self.assertEqual(files.read_json(path), {"x": 1.5, "y": [1, 2]})
    self.assertIsNone(files.read_json(path + ".missing"))

  def test_rewrite_replaces_the_whole_file(self):
    path = os.path.join(self.create_tempdir().full_path, "note.txt")
    files.write_text(path, "a much longer first version\n")
    files.write_text(path, "short\n")
    with open(path) as f:
      self.assertEqual(f.read(), "short\n")

  def test_without_replace_the_second_of_two_racing_writers_fails(self):
    directory = self.create_tempdir().full_path
    path = os.path.join(directory, "out.wav")
    with self.assertRaisesRegex(FileExistsError, f"{path} was written by another process "
                                "while this one ran; it was not replaced"):
      with files.atomic_writer(path, replace=False) as f:
        f.write(b"mine")
        files.write_bytes(path, b"theirs", replace=False)  # finishes first
    with open(path, "rb") as f:
      self.assertEqual(f.read(), b"theirs")
    self.assertEqual(os.listdir(directory), ["out.wav"])  # no temporary left
    ram = "ram://files_test/x.bin"
    self.assertEqual(files.write_bytes(ram, b"1", replace=False), ram)
    with self.assertRaises(FileExistsError):
      files.write_bytes(ram, b"2", replace=False)

  def test_a_failed_write_leaves_the_old_file_and_no_temporary(self):
    directory = self.create_tempdir().full_path
    target = os.path.join(directory, "taken")
    os.makedirs(os.path.join(target, "inside"))  # a non-empty directory cannot be replaced
    with self.assertRaisesRegex(OSError, r"Could not write .*taken \(.+\); it is unchanged"):
      files.write_bytes(target, b"data")
    self.assertEqual(os.listdir(directory), ["taken"])
    self.assertEqual(os.listdir(target), ["inside"])

  def test_a_damaged_state_file_is_named_with_what_is_wrong_and_what_to_do(self):
    path = os.path.join(self.create_tempdir().full_path, "state.json")
    fields = {"host": str, "pid": int, "value": float, "items": list}
    cases = {
        "not json{": r"is not valid JSON \(Expecting value",
        "[1, 2]": r"holds list \[1, 2\], not an object with host, pid, value, items",
        '{"host": "vm"}': "has no 'pid'",
        '{"host": "vm", "pid": "abc", "value": 1, "items": []}': "holds pid='abc', not an "
                                                                   "integer",
        '{"host": "vm", "pid": true, "value": 1, "items": []}': "holds pid=True, not an integer",
        '{"host": "vm", "pid": 5, "value": NaN, "items": []}': "holds value=nan, not a finite "
                                                                "number",
        '{"host": "vm", "pid": 5, "value": "abc", "items": []}': "holds value='abc', not a "
                                                                  "finite number",
        '{"host": "vm", "pid": 5, "value": 1, "items": 5}': "holds items=5, not a list"}
    for text, problem in cases.items():
      with open(path, "w") as f:
        f.write(text)
      with self.assertRaisesRegex(files.DamagedFileError,
                                  f"^{path} {problem}.*: delete it to start afresh$", msg=text):
        files.read_json(path, fields, fix="delete it to start afresh")
    with open(path, "w") as f:
      f.write('{"host": "vm", "pid": 5, "value": 2, "items": [], "more": 1}')
    self.assertEqual(files.read_json(path, fields)["value"], 2)
    with open(path, "wb") as f:
      f.write(b'{"host": "\xff"}')
    with self.assertRaisesRegex(files.DamagedFileError, f"^{path} is not text \\(byte 10: "
                                "invalid start byte\\): delete it"):
      files.read_json(path, fields, fix="delete it")
    directory = os.path.join(os.path.dirname(path), "run_config.json")
    os.makedirs(directory)
    with self.assertRaisesRegex(files.DamagedFileError, f"^{directory} is a directory, not "
                                "the JSON file it should be: move it"):
      files.read_json(directory, fix="move it")

  def test_reason_finds_the_operating_systems_words(self):
    self.assertEqual(files.reason(OSError(28, "No space left on device")),
                     "No space left on device")
    tf_error = tf.errors.OutOfRangeError(
        None, None, "{{function_node __wrapped__SaveV2}} d/ckpt-2_temp/part-0.data; "
        "File too large [Op:SaveV2]")
    self.assertEqual(files.reason(tf_error), "File too large")
    self.assertEqual(files.reason(ValueError("first\nlast line")), "last line")


if __name__ == "__main__":
  tf.test.main()
