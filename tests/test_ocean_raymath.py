"""shoal's raymath stand-in computes rotations (school's agents turn by them): its quaternion functions,
compiled as the Ocean envs compile them, against the same rotations done in float64 by numpy."""

import subprocess

import numpy as np

import shoal
from shoal.native.builds import compiler
from shoal.ocean.build import CSRC

PROGRAM = r"""
#include <stdio.h>
#include <shoal/env.h>
static shoal_env* shoal_ocean_env_of_rand_state(uint64_t* s) { (void)s; return 0; }
#include "raymath.h"
int main(void) {
    float r[8];
    while (scanf("%f %f %f %f %f %f %f %f", &r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6], &r[7]) == 8) {
        Quaternion a = QuaternionFromAxisAngle((Vector3){r[0], r[1], r[2]}, r[3]);
        Quaternion b = QuaternionFromAxisAngle((Vector3){r[6], r[4], r[5]}, r[7]);
        Quaternion ab = QuaternionMultiply(a, b);
        Vector3 w = Vector3RotateByQuaternion((Vector3){r[4], r[5], r[6]}, ab);
        Matrix m = QuaternionToMatrix(QuaternionNormalize((Quaternion){r[0], r[1], r[2], r[3]}));
        Quaternion id = QuaternionIdentity();
        printf("%.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n",
               w.x, w.y, w.z, m.m0, m.m4, m.m8, m.m1, m.m5, m.m9, m.m2, m.m6, m.m10, m.m15, id.x, id.y, id.z, id.w);
    }
}
"""


def _rotation(axis, angle):
    """Rodrigues' rotation matrix in float64."""
    x, y, z = axis / np.linalg.norm(axis)
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _quaternion_matrix(q):
    x, y, z, w = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_quaternion_rotations_are_real_rotations(tmp_path):
    source = tmp_path / "probe.c"
    source.write_text(PROGRAM)
    program = tmp_path / "probe"
    include = [f"-I{CSRC / 'include'}", f"-I{shoal.get_include()}"]
    subprocess.run([compiler(), "-O2", "-fwrapv", *include, str(source), "-o", str(program), "-lm"], check=True)
    inputs = np.random.default_rng(0).uniform(-2, 2, size=(500, 8)).astype(np.float32)
    text = "\n".join(" ".join(f"{v:.9g}" for v in row) for row in inputs)
    out = subprocess.run([str(program)], input=text, capture_output=True, text=True, check=True).stdout
    got = np.array([[float(v) for v in line.split()] for line in out.splitlines()])
    assert got.shape == (500, 17)
    for row, values in zip(inputs.astype(np.float64), got):
        # a then b: rotating v by the product a*b is rotating by b first, then by a.
        composed = _rotation(row[0:3], row[3]) @ _rotation(row[[6, 4, 5]], row[7])
        np.testing.assert_allclose(values[0:3], composed @ row[4:7], atol=2e-5)
        np.testing.assert_allclose(values[3:12].reshape(3, 3), _quaternion_matrix(row[0:4]), atol=2e-6)
        assert values[12] == 1.0 and list(values[13:17]) == [0.0, 0.0, 0.0, 1.0]
