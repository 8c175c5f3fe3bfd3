// The reference implementation of each op, one overload per attribute type; one file per family.
#pragma once
#include "dnngraph/status.hpp"
#include "engines/ref/view.hpp"

namespace dnngraph::ref {

Status run(const ConvFpropAttr&, const NodeArgs&);           // ref_conv.cpp
Status run(const ConvDgradAttr&, const NodeArgs&);           // ref_conv.cpp
Status run(const ConvWgradAttr&, const NodeArgs&);           // ref_conv.cpp
Status run(const MatmulAttr&, const NodeArgs&);              // ref_matmul.cpp
Status run(const PointwiseAttr&, const NodeArgs&);           // ref_pointwise.cpp
Status run(const ReductionAttr&, const NodeArgs&);           // ref_reduction.cpp
Status run(const BatchnormInferenceAttr&, const NodeArgs&);  // ref_norm.cpp
Status run(const LayernormAttr&, const NodeArgs&);           // ref_norm.cpp
Status run(const RmsnormAttr&, const NodeArgs&);             // ref_norm.cpp
Status run(const ResampleAttr&, const NodeArgs&);            // ref_resample.cpp
Status run(const SdpaAttr&, const NodeArgs&);                // ref_sdpa.cpp
Status run(const ReshapeAttr&, const NodeArgs&);             // ref_layout.cpp
Status run(const TransposeAttr&, const NodeArgs&);           // ref_layout.cpp
Status run(const SliceAttr&, const NodeArgs&);               // ref_layout.cpp
Status run(const ConcatenateAttr&, const NodeArgs&);         // ref_layout.cpp
Status run(const LayernormBackwardAttr&, const NodeArgs&);     // ref_norm_training.cpp
Status run(const RmsnormBackwardAttr&, const NodeArgs&);       // ref_norm_training.cpp
Status run(const BatchnormAttr&, const NodeArgs&);             // ref_norm_training.cpp
Status run(const BatchnormBackwardAttr&, const NodeArgs&);     // ref_norm_training.cpp
Status run(const InstancenormAttr&, const NodeArgs&);          // ref_norm_training.cpp
Status run(const InstancenormBackwardAttr&, const NodeArgs&);  // ref_norm_training.cpp
Status run(const GenstatsAttr&, const NodeArgs&);              // ref_reduction.cpp
Status run(const SdpaBackwardAttr&, const NodeArgs&);          // ref_sdpa_backward.cpp

// The scalar function of a pointwise mode, in double (tests use it as the oracle of one element).
double pointwise_apply(const PointwiseAttr& attr, double a, double b, double c);

}  // namespace dnngraph::ref
