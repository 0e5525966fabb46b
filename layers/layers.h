// layers.h: every layer, one file each (linear, embedding, norms, attention, mlp, bide_head).
#pragma once
#include "attention.h"
#include "bide_head.h"
#include "bitlinear.h"
#include "embedding.h"
#include "linear.h"
#include "mlp.h"
#include "norms.h"
