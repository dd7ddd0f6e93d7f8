#pragma once
/// @file init.h
/// Parameter initialization (torch.nn.init). Each fills its tensor in place, without
/// recording, from the global generator, and returns it.

#include <string>

#include "kiln/tensor.h"

namespace kiln::nn::init {

/// fan_in = size(1) · receptive field, fan_out = size(0) · receptive field.
std::pair<int64_t, int64_t> fans(const Tensor& t);
/// The recommended gain: "linear"/"conv2d"/"sigmoid" 1, "tanh" 5/3, "relu" √2,
/// "leaky_relu" √(2/(1+slope²)).
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

Tensor& uniform_(Tensor& t, double low = 0.0, double high = 1.0);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0);
Tensor& constant_(Tensor& t, double value);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
/// U(−b, b) with b = gain·√(3/fan); PyTorch's default for Linear and Conv weights is
/// a = √5 with leaky_relu: b = 1/√fan_in.
Tensor& kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu");
Tensor& kaiming_normal_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor& xavier_uniform_(Tensor& t, double gain = 1.0);
Tensor& xavier_normal_(Tensor& t, double gain = 1.0);

}  // namespace kiln::nn::init
