#!/usr/bin/python3
"""Writes the binary seeds of the fuzz corpora (the text seeds are written by hand): small .npy
arrays of every dtype pelab reads, and small NIfTI-1 and NIfTI-2 images. Run it from anywhere;
it needs NumPy. The files are committed; rerun only to change them."""

import io
import pathlib
import struct

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def npy_seeds():
    out = HERE / "corpus" / "npy"
    out.mkdir(parents=True, exist_ok=True)
    arrays = {
        "float32_2x3.npy": np.arange(6, dtype="<f4").reshape(2, 3) / 7,
        "float64_3.npy": np.array([0.5, -1.25, np.nan], dtype="<f8"),
        "int32_2x2.npy": np.array([[1, -2], [3, 4]], dtype="<i4"),
        "int64_scalar.npy": np.array(42, dtype="<i8"),
        "uint8_4.npy": np.array([0, 1, 254, 255], dtype="|u1"),
        "bool_2x1x2.npy": np.array([[[True, False]], [[False, True]]]),
        "float32_empty_0x3.npy": np.zeros((0, 3), dtype="<f4"),
    }
    for name, array in arrays.items():
        np.save(out / name, array)
    # Format version 2.0 (4-byte header length), as numpy writes for very long headers.
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.ones((2, 2), dtype="<f4"), version=(2, 0))
    (out / "float32_2x2_v2.npy").write_bytes(buffer.getvalue())


def nifti1(dims, datatype, bitpix, data, sform=True, slope=0.0, units=2 | 8, pixdim4=0.0):
    header = bytearray(348)
    struct.pack_into("<i", header, 0, 348)
    dim = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    struct.pack_into("<8h", header, 40, *dim)
    struct.pack_into("<hh", header, 70, datatype, bitpix)
    struct.pack_into("<8f", header, 76, 1.0, 2.0, 2.0, 3.0, pixdim4, 0, 0, 0)
    struct.pack_into("<f", header, 108, 352.0)
    struct.pack_into("<ff", header, 112, slope, 0.0)
    header[123] = units
    struct.pack_into("<hh", header, 252, 1, 1 if sform else 0)
    struct.pack_into("<6f", header, 256, 0, 0, 0, -10.0, 20.0, -5.0)
    if sform:
        struct.pack_into("<12f", header, 280, -2, 0, 0, 90, 0, 2, 0, -126, 0, 0, 2, -72)
    header[344:348] = b"n+1\0"
    return bytes(header) + b"\0\0\0\0" + data.tobytes()


def nifti2(dims, datatype, bitpix, data):
    header = bytearray(540)
    struct.pack_into("<i", header, 0, 540)
    header[4:12] = b"n+2\0\r\n\032\n"
    struct.pack_into("<hh", header, 12, datatype, bitpix)
    dim = [len(dims)] + list(dims) + [1] * (7 - len(dims))
    struct.pack_into("<8q", header, 16, *dim)
    struct.pack_into("<8d", header, 104, 1.0, 1.5, 1.5, 1.5, 2.5, 0, 0, 0)
    struct.pack_into("<q", header, 168, 544)
    struct.pack_into("<ii", header, 344, 1, 0)
    struct.pack_into("<6d", header, 352, 0, 0, 0, 1.0, 2.0, 3.0)
    struct.pack_into("<i", header, 500, 2 | 8)
    return bytes(header) + b"\0\0\0\0" + data.tobytes()


def nifti_seeds():
    out = HERE / "corpus" / "brain_files"
    out.mkdir(parents=True, exist_ok=True)
    labels = np.array([0, 1, 1, 2, 0, 1, 2, 2, 3, 3, 0, 0] * 2, dtype="<u1")  # 4x3x2
    (out / "atlas_4x3x2_uint8.nii").write_bytes(nifti1((4, 3, 2), 2, 8, labels))
    rng = np.random.default_rng(7)
    bold = (100 + rng.standard_normal(3 * 3 * 2 * 5)).astype("<f4")
    (out / "bold_3x3x2x5_float32_qform.nii").write_bytes(
        nifti1((3, 3, 2, 5), 16, 32, bold, sform=False, pixdim4=2.0))
    scaled = np.arange(2 * 2 * 2, dtype="<i2")
    (out / "scaled_2x2x2_int16.nii").write_bytes(nifti1((2, 2, 2), 4, 16, scaled, slope=0.5))
    (out / "nifti2_2x2x1x3_float64.nii").write_bytes(
        nifti2((2, 2, 1, 3), 64, 64, np.linspace(-1, 1, 12).astype("<f8")))


if __name__ == "__main__":
    npy_seeds()
    nifti_seeds()
