#pragma once
/// @file nn.h
/// Everything of kiln::nn: Module, the layers, functional ops and losses, init.
#include "kiln/nn/containers.h"
#include "kiln/nn/data_parallel.h"
#include "kiln/nn/distributed_data_parallel.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/loss.h"
#include "kiln/nn/module.h"
#include "kiln/nn/modules.h"
#include "kiln/nn/transformer.h"
