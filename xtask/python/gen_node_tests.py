"""Write the ONNX backend node tests whose name contains 'quantiz' as
<out>/<test_name>/model.onnx + test_data_set_N/{input,output}_M.pb.

The onnx wheel no longer ships the generated data, so it is rebuilt from the test-case
collector. Run by `cargo xtask gen-data`.
"""
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case.node import collect_testcases


def as_tensor(value, name):
    if isinstance(value, onnx.TensorProto):  # float8 / sub-byte cases come pre-built
        t = onnx.TensorProto()
        t.CopyFrom(value)
        t.name = name
        return t
    return numpy_helper.from_array(np.asarray(value), name)


def main(out_dir):
    warnings.simplefilter("ignore")
    count = 0
    for case in collect_testcases(None):
        if "quantiz" not in case.name.lower():
            continue
        d = os.path.join(out_dir, case.name)
        os.makedirs(d, exist_ok=True)
        onnx.save(case.model, os.path.join(d, "model.onnx"))
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            sd = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(sd, exist_ok=True)
            for j, v in enumerate(inputs):
                onnx.save_tensor(as_tensor(v, g.input[j].name), os.path.join(sd, f"input_{j}.pb"))
            for j, v in enumerate(outputs):
                onnx.save_tensor(as_tensor(v, g.output[j].name), os.path.join(sd, f"output_{j}.pb"))
        count += 1
    print(f"wrote {count} node tests to {out_dir}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "node")
