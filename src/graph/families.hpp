// The traits of every op, one line each; each is defined in its op family's file, beside the
// op's inference, JSON fields and FLOP count.
#pragma once
#include "graph/op_traits.hpp"

namespace dnngraph {

template <class A>
struct OpTag {};

const OpTraits& traits(OpTag<ConvFpropAttr>);           // conv.cpp
const OpTraits& traits(OpTag<ConvDgradAttr>);           // conv.cpp
const OpTraits& traits(OpTag<ConvWgradAttr>);           // conv.cpp
const OpTraits& traits(OpTag<MatmulAttr>);              // matmul.cpp
const OpTraits& traits(OpTag<PointwiseAttr>);           // pointwise.cpp
const OpTraits& traits(OpTag<ReductionAttr>);           // reduction.cpp
const OpTraits& traits(OpTag<BatchnormInferenceAttr>);  // norm.cpp
const OpTraits& traits(OpTag<LayernormAttr>);           // norm.cpp
const OpTraits& traits(OpTag<RmsnormAttr>);             // norm.cpp
const OpTraits& traits(OpTag<ResampleAttr>);            // resample.cpp
const OpTraits& traits(OpTag<SdpaAttr>);                // sdpa.cpp
const OpTraits& traits(OpTag<ReshapeAttr>);             // layout.cpp
const OpTraits& traits(OpTag<TransposeAttr>);           // layout.cpp
const OpTraits& traits(OpTag<SliceAttr>);               // layout.cpp
const OpTraits& traits(OpTag<ConcatenateAttr>);         // layout.cpp
const OpTraits& traits(OpTag<LayernormBackwardAttr>);     // norm_training.cpp
const OpTraits& traits(OpTag<RmsnormBackwardAttr>);       // norm_training.cpp
const OpTraits& traits(OpTag<BatchnormAttr>);             // norm_training.cpp
const OpTraits& traits(OpTag<BatchnormBackwardAttr>);     // norm_training.cpp
const OpTraits& traits(OpTag<InstancenormAttr>);          // norm_training.cpp
const OpTraits& traits(OpTag<InstancenormBackwardAttr>);  // norm_training.cpp
const OpTraits& traits(OpTag<GenstatsAttr>);              // reduction.cpp
const OpTraits& traits(OpTag<SdpaBackwardAttr>);          // sdpa.cpp

}  // namespace dnngraph
