// replaced as the calibration sources land
