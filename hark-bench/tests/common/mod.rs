pub mod crafted;
