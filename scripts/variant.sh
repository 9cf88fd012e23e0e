# usage: variant.sh SEEDS TRAINJSON SUITEJSON
