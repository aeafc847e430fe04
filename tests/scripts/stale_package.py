#!/usr/bin/env python3
"""Writes a copy of an AOTInductor package whose metadata says another torch made it (a stale
package, for the loader's test): stale_package.py IN.pt2 OUT.pt2 [VERSION]. No torch needed."""
import json
import sys
import zipfile

src, dst = sys.argv[1], sys.argv[2]
version = sys.argv[3] if len(sys.argv) > 3 else "2.10.0"
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        if info.filename.endswith("_metadata.json"):
            meta = json.loads(data)
            meta["pil_torch_version"] = version
            data = json.dumps(meta).encode()
        zout.writestr(info, data)
