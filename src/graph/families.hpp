// Shape inference and validation, one overload per op; each op family's file defines its own.
#pragma once
#include "graph/node.hpp"

namespace dnngraph {

Status infer(const ConvFpropAttr&, NodeSpec&, const GraphDefaults&);           // conv.cpp
Status infer(const ConvDgradAttr&, NodeSpec&, const GraphDefaults&);           // conv.cpp
Status infer(const ConvWgradAttr&, NodeSpec&, const GraphDefaults&);           // conv.cpp
Status infer(const MatmulAttr&, NodeSpec&, const GraphDefaults&);              // matmul.cpp
Status infer(const PointwiseAttr&, NodeSpec&, const GraphDefaults&);           // pointwise.cpp
Status infer(const ReductionAttr&, NodeSpec&, const GraphDefaults&);           // reduction.cpp
Status infer(const BatchnormInferenceAttr&, NodeSpec&, const GraphDefaults&);  // norm.cpp
Status infer(const LayernormAttr&, NodeSpec&, const GraphDefaults&);           // norm.cpp
Status infer(const RmsnormAttr&, NodeSpec&, const GraphDefaults&);             // norm.cpp
Status infer(const ResampleAttr&, NodeSpec&, const GraphDefaults&);            // resample.cpp
Status infer(const SdpaAttr&, NodeSpec&, const GraphDefaults&);                // sdpa.cpp
Status infer(const ReshapeAttr&, NodeSpec&, const GraphDefaults&);             // layout.cpp
Status infer(const TransposeAttr&, NodeSpec&, const GraphDefaults&);           // layout.cpp
Status infer(const SliceAttr&, NodeSpec&, const GraphDefaults&);               // layout.cpp
Status infer(const ConcatenateAttr&, NodeSpec&, const GraphDefaults&);         // layout.cpp

}  // namespace dnngraph
