#!/usr/bin/env bash
# Exports the demo models and images into models/ (generated, never committed).
# Skips the export when the models are already there and were exported by the current
# exporter scripts (models/.exporter-stamp holds their hash); --force re-exports.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=$(cat tools/export_models.py tools/export_detection.py tools/export_digits.py | sha1sum | cut -c1-40)
# torch >= 2.6 (Debian 13, tools/debian13.sh) also compiles AOTInductor packages (NAME.pt2: the aoti backend).
aoti=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, "tools"); import export_models; print(int(export_models.can_compile_aoti()))')
# With onnx and onnxruntime (Debian 13) also ONNX files (NAME.onnx, ssdlite_head.onnx: the onnxruntime backends).
onnx=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, "tools"); import export_models; print(int(export_models.can_export_onnx()))' 2>/dev/null)
if [[ -f models/resnet18.pt && "$(cat models/.exporter-stamp 2>/dev/null)" != "$stamp" ]]; then
  echo "prepare-demo: the exporter scripts changed since models/ was exported; exporting again"
fi
if [[ "${1:-}" != "--force" && "$(cat models/.exporter-stamp 2>/dev/null)" == "$stamp" && -f models/resnet18.pt && -f models/lraspp_mobilenet_v3_large.pt \
      && -f models/mobilenet_v3_small.pt && -f models/images/scene1.png \
      && -f models/digits_cnn.pt && -f models/digits/labels.txt && -f models/images/chelsea.png \
      && -f models/ssdlite_head.pt && -f models/retinanet.pt && -f models/tie_detector.pt \
      && ( -f models/resnet18.pt2 || $aoti == 0 ) && ( -f models/resnet18.onnx || $onnx == 0 ) ]]; then
  echo "prepare-demo: models/ is ready"
  exit 0
fi
mkdir -p models/images
/usr/bin/python3 tools/export_models.py demo --out models  # with onnx: also NAME.onnx
/usr/bin/python3 tools/export_models.py detection --out models  # tier 3: SSDlite, RetinaNet, the tie fixture; with onnx: ssdlite_head.onnx
/usr/bin/python3 tools/export_models.py image --out models/images/scene0.png --size 256 --seed 0
/usr/bin/python3 tools/export_models.py image --out models/images/scene1.png --size 256 --seed 1
/usr/bin/python3 tools/export_models.py digits --out models  # a CNN trained on scikit-learn's digits (seconds)
/usr/bin/python3 tools/export_models.py photos --out models/images  # real photos from skimage.data
echo "$stamp" >models/.exporter-stamp
echo "prepare-demo: exported the demo models and images into models/"
